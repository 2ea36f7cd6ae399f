// `bun run bench/embedded/memory.ts [--sends=N] [--database=disk|memory] [--retention-ms=MS]`:
// the embedded server's resident memory as sends accumulate, and after the
// resume window (RESUME_RETENTION_MS, set here to the 10 minutes the contract
// requires at least) has passed for all of them. A finished turn's stream
// stays readable in the process for that window (state/turn-log/memory-turn-logs.ts),
// so RSS grows with the sends of the last window and comes down once the
// sweeper (every minute) drops them; with `--database=memory` the database
// itself (PGlite in memory) also lives in the process and keeps growing.
// Bounded: N sends, then the window plus two sweeps.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { choiceFlag, wholeNumberFlag } from '../cli-flags.ts'
import { readRss } from '../harness/rss.ts'
import { startServer } from '../harness/server.ts'
import { sendAndStream } from '../harness/sse-client.ts'

const sends = wholeNumberFlag('sends', 10_000, { min: 100, max: 100_000 })
const retentionMs = wholeNumberFlag('retention-ms', 600_000, { min: 600_000, max: 3_600_000 })
const database = choiceFlag('database', ['disk', 'memory'])
const CONCURRENCY = 10
const SWEEP_MS = 60_000

const dataDir = database === 'disk' ? mkdtempSync(join(tmpdir(), 'conduit-memory-')) : undefined
const server = await startServer({
  backend: {
    label: 'embedded',
    databaseUrl: 'memory://',
    redisUrl: undefined,
    stateUrl: undefined,
  },
  chunkDelayMs: 0,
  ...(dataDir ? { dataDir } : {}),
  env: { RESUME_RETENTION_MS: String(retentionMs) },
})
const mib = (bytes: number | undefined) =>
  bytes === undefined ? 'n/a' : String(Math.round(bytes / 2 ** 20))
const started = performance.now()
const rows: string[] = []
const row = (what: string, done: number) => {
  const line = `| ${((performance.now() - started) / 1000).toFixed(0)} | ${what} | ${done} | ${mib(readRss(server.pid))} |`
  rows.push(line)
  console.error(line)
}

try {
  row('start', 0)
  let next = 0
  let failed = 0
  const step = Math.max(1, Math.floor(sends / 10))
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, client) => {
      while (next < sends) {
        const index = next++
        const result = await sendAndStream({
          baseUrl: server.url,
          userId: `memory-${client}`,
          text: `Memory benchmark send ${index}: ${'how much does a turn keep? '.repeat(6)}`,
          timeoutMs: 30_000,
        })
        if (!result.done) failed++
        if ((index + 1) % step === 0) row('sending', index + 1)
      }
    }),
  )
  if (failed > 0) throw new Error(`${failed} of ${sends} sends did not complete`)
  const lastSend = performance.now()
  row('sent', sends)
  // The window, then two sweeps: every log is dropped and the memory settles.
  while (performance.now() - lastSend < retentionMs + 2 * SWEEP_MS) {
    await Bun.sleep(30_000)
    row('waiting', sends)
  }
  console.log(
    [
      `## Embedded memory over ${sends} sends (${database === 'disk' ? 'DATA_DIR on disk, the default' : 'DATABASE_URL=memory://'}), RESUME_RETENTION_MS=${retentionMs}`,
      '',
      '| s | phase | sends | server RSS MiB |',
      '|--:|---|--:|--:|',
      ...rows,
    ].join('\n'),
  )
} finally {
  await server.stop()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
}
process.exit(0)
