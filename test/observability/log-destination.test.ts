// The log destination: lines wait for FLUSH_MS (or BATCH_BYTES pending) and go
// out together, in order; what is pending is written when the process exits;
// past the byte bound new lines are dropped and counted, not held; megabytes
// logged over many turns reach a pipe whole and in order.
import { afterAll, expect, test } from 'bun:test'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  BATCH_BYTES,
  batchedDestination,
  FLUSH_MS,
  type Later,
} from '../../src/observability/log-destination.ts'

const dir = mkdtempSync(join(tmpdir(), 'conduit-log-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const MODULE = join(import.meta.dir, '../../src/observability/log-destination.ts')

/** A clock the test moves: `later` records what is put off, `fire` runs it. */
function manualClock() {
  const pending: { run: () => void; ms: number }[] = []
  const later: Later = (run, ms) => {
    pending.push({ run, ms })
  }
  return {
    later,
    delays: () => pending.map((entry) => entry.ms),
    fire() {
      for (const { run } of pending.splice(0)) run()
    },
  }
}

function fileDestination(name: string, maxPendingBytes?: number) {
  const path = join(dir, name)
  const fd = openSync(path, 'w')
  const clock = manualClock()
  return {
    path,
    fd,
    clock,
    destination: batchedDestination({ fd, maxPendingBytes, later: clock.later }),
  }
}

test('lines wait for the flush time and are then written together, in order', () => {
  const { path, fd, clock, destination } = fileDestination('window.log')
  for (let i = 0; i < 3; i++) destination.write(`line ${i}\n`)
  expect(readFileSync(path, 'utf8')).toBe('')
  // One write put off, by FLUSH_MS, however many lines wait for it.
  expect(clock.delays()).toEqual([FLUSH_MS])
  clock.fire()
  expect(readFileSync(path, 'utf8')).toBe('line 0\nline 1\nline 2\n')
  destination.write('line 3\n')
  destination.flushSync()
  expect(readFileSync(path, 'utf8')).toBe('line 0\nline 1\nline 2\nline 3\n')
  closeSync(fd)
})

test('once BATCH_BYTES are pending they are written at once, without waiting', () => {
  const { path, fd, clock, destination } = fileDestination('batch.log')
  const line = `${'x'.repeat(1023)}\n`
  const lines = Math.ceil(BATCH_BYTES / line.length)
  for (let i = 0; i < lines - 1; i++) destination.write(line)
  expect(readFileSync(path, 'utf8')).toBe('')
  destination.write(line)
  expect(readFileSync(path, 'utf8')).toBe(line.repeat(lines))
  destination.write('after\n')
  clock.fire()
  expect(readFileSync(path, 'utf8')).toBe(`${line.repeat(lines)}after\n`)
  closeSync(fd)
})

test('text that is not ASCII is written whole', () => {
  const { path, fd, clock, destination } = fileDestination('utf8.log')
  destination.write('{"msg":"héllo 😀"}\n')
  clock.fire()
  expect(readFileSync(path, 'utf8')).toBe('{"msg":"héllo 😀"}\n')
  closeSync(fd)
})

test('past the byte bound, new lines are dropped and counted; earlier ones are kept', () => {
  const { path, fd, clock, destination } = fileDestination('bound.log', 20)
  destination.write('0123456789\n')
  destination.write('abcdefghij\n')
  destination.write('ok\n')
  expect(destination.dropped()).toBe(1)
  clock.fire()
  expect(readFileSync(path, 'utf8')).toBe('0123456789\nok\n')
  // Once written, there is room again.
  destination.write('abcdefghij\n')
  destination.flushSync()
  expect(readFileSync(path, 'utf8')).toBe('0123456789\nok\nabcdefghij\n')
  expect(destination.dropped()).toBe(1)
  closeSync(fd)
})

test('what is pending when the process exits is written', async () => {
  const child = Bun.spawn(
    [
      process.execPath,
      '-e',
      `const { batchedDestination } = await import(${JSON.stringify(MODULE)})
       const out = batchedDestination()
       out.write('before exit 1\\n'); out.write('before exit 2\\n')
       process.exit(0)`,
    ],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  expect(err).toBe('')
  expect(code).toBe(0)
  expect(out).toBe('before exit 1\nbefore exit 2\n')
})

test('megabytes logged over many turns reach a pipe whole and in order', async () => {
  const child = Bun.spawn(
    [
      process.execPath,
      '-e',
      `const { batchedDestination } = await import(${JSON.stringify(MODULE)})
       const out = batchedDestination()
       const pad = 'x'.repeat(1000)
       for (let i = 0; i < 3000; i++) { out.write(i + ' ' + pad + '\\n'); if (i % 100 === 0) await new Promise((r) => setImmediate(r)) }`,
    ],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  const code = await child.exited
  const out = await new Response(child.stdout).text()
  expect(code).toBe(0)
  const numbers = out
    .trimEnd()
    .split('\n')
    .map((line) => Number(line.split(' ')[0]))
  expect(numbers).toEqual(Array.from({ length: 3000 }, (_, i) => i))
})
