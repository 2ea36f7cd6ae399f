// The log destination: lines logged in one event-loop turn go out together
// once the turn ends, in order; what is pending is written when the process
// exits; past the byte bound new lines are dropped and counted, not held;
// megabytes logged over many turns reach a pipe whole and in order.
import { afterAll, expect, test } from 'bun:test'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { turnBatchedDestination } from '../../src/observability/log-destination.ts'

const dir = mkdtempSync(join(tmpdir(), 'conduit-log-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))
const MODULE = join(import.meta.dir, '../../src/observability/log-destination.ts')

function fileDestination(name: string, maxPendingBytes?: number) {
  const path = join(dir, name)
  const fd = openSync(path, 'w')
  return { path, fd, destination: turnBatchedDestination({ fd, maxPendingBytes }) }
}

test('lines of one turn are written together once the turn ends, in order', async () => {
  const { path, fd, destination } = fileDestination('turn.log')
  for (let i = 0; i < 3; i++) destination.write(`line ${i}\n`)
  expect(readFileSync(path, 'utf8')).toBe('')
  await nextTurn()
  expect(readFileSync(path, 'utf8')).toBe('line 0\nline 1\nline 2\n')
  destination.write('line 3\n')
  destination.flushSync()
  expect(readFileSync(path, 'utf8')).toBe('line 0\nline 1\nline 2\nline 3\n')
  closeSync(fd)
})

test('past the byte bound, new lines are dropped and counted; earlier ones are kept', async () => {
  const { path, fd, destination } = fileDestination('bound.log', 20)
  destination.write('0123456789\n')
  destination.write('abcdefghij\n')
  destination.write('ok\n')
  expect(destination.dropped()).toBe(1)
  await nextTurn()
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
      `const { turnBatchedDestination } = await import(${JSON.stringify(MODULE)})
       const out = turnBatchedDestination()
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
      `const { turnBatchedDestination } = await import(${JSON.stringify(MODULE)})
       const out = turnBatchedDestination()
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
