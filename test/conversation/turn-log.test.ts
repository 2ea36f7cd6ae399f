// TurnLog: ordered items, subscribers from any offset, live and after close.
import { expect, test } from 'bun:test'
import { TurnLog } from '../../src/conversation/turn-log.ts'
import { TurnLogs } from '../../src/conversation/turn-logs.ts'

const bytes = (s: string) => new TextEncoder().encode(s)
const text = (items: Uint8Array[]) => items.map((i) => new TextDecoder().decode(i))

async function collect(iterable: AsyncIterable<Uint8Array>) {
  const out: Uint8Array[] = []
  for await (const item of iterable) out.push(item)
  return out
}

test('a subscriber from offset k gets items k… and ends at close', async () => {
  const log = new TurnLog('c', 'm', 'u')
  for (const s of ['a', 'b', 'c']) log.append(bytes(s))
  const reading = collect(log.subscribe(1))
  log.append(bytes('d'))
  log.close()
  expect(text(await reading)).toEqual(['b', 'c', 'd'])
  expect(text(await collect(log.subscribe(0)))).toEqual(['a', 'b', 'c', 'd'])
  expect(text(await collect(log.subscribe(4)))).toEqual([])
})

test('live subscribers wait for items; abort ends the subscription only', async () => {
  const log = new TurnLog('c', 'm', 'u')
  const abort = new AbortController()
  const first = collect(log.subscribe(0, abort.signal))
  const second = collect(log.subscribe(0))
  log.append(bytes('x'))
  await Bun.sleep(5)
  abort.abort()
  log.append(bytes('y'))
  log.close()
  expect(text(await first)).toEqual(['x'])
  expect(text(await second)).toEqual(['x', 'y'])
})

test('appending after close is an error', () => {
  const log = new TurnLog('c', 'm', 'u')
  log.close()
  expect(() => log.append(bytes('late'))).toThrow()
})

test('finished logs are kept for the retention period, running ones always', () => {
  let now = 1_000
  const logs = new TurnLogs(600_000, () => now)
  const done = new TurnLog('c', 'done', 'u')
  const running = new TurnLog('c', 'running', 'u')
  logs.add(done)
  logs.add(running)
  done.close(now)
  now += 600_000
  expect(logs.get('done')).toBe(done)
  now += 1
  expect(logs.get('done')).toBeUndefined()
  expect(logs.get('running')).toBe(running)
  logs.close()
})
