// readLimitedText (src/http/body-limit.ts) on its own: a body whose stream
// never ends is refused as too_slow once its deadline passes, one that keeps
// sending past the limit as too_large, and a body that ends in time is read
// whole. The same over a real socket is test/body-timeout.test.ts.
import { expect, test } from 'bun:test'
import { DomainError } from '../src/errors.ts'
import { readLimitedText } from '../src/http/body-limit.ts'

const encoder = new TextEncoder()

/** A POST whose body is the stream. */
const requestOf = (body: ReadableStream<Uint8Array>) =>
  new Request('http://localhost/', { method: 'POST', body, duplex: 'half' } as RequestInit)

test('a body that never ends is refused as too_slow, and its stream is cancelled', async () => {
  let cancelled = false
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode('{"a":'))
    },
    cancel() {
      cancelled = true
    },
  })
  const refusal = await readLimitedText(requestOf(body), { timeoutMs: 50 }).catch(
    (error: unknown) => error,
  )
  expect(refusal).toBeInstanceOf(DomainError)
  expect(refusal).toMatchObject({ kind: 'too_slow' })
  expect(cancelled).toBe(true)
})

test('a body past the limit is too_large, whatever the deadline', async () => {
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(new Uint8Array(1024))
    },
  })
  const refusal = await readLimitedText(requestOf(body), {
    maxBytes: 10_000,
    timeoutMs: 600_000,
  }).catch((error: unknown) => error)
  expect(refusal).toMatchObject({ kind: 'too_large' })
})

test('a body that ends in time is read whole', async () => {
  const parts = ['{"a":', '1}']
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const part = parts.shift()
      if (part === undefined) controller.close()
      else controller.enqueue(encoder.encode(part))
    },
  })
  expect(await readLimitedText(requestOf(body), { timeoutMs: 600_000 })).toBe('{"a":1}')
})
