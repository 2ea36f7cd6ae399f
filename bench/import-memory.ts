// `bun run bench/import-memory.ts [--megabytes=N] [--format=json|zip] [--database=disk|memory]`:
// what one import of the largest file costs the server that runs it (CONTRACT
// §19: RSS up by at most 128 MiB, embedded or real; issue #29). Starts the
// real service as a child process (embedded, or the Postgres of DATABASE_URL),
// generates a chatgpt.com-shaped conversations.json of N MiB (default:
// IMPORT_MAX_BYTES's default, 64), imports it, and meanwhile samples the
// server's RSS from /proc/<pid>/status and times a cheap request
// (GET /docs/json, then GET /health) made every 200 ms: how long other users
// wait behind an import. Bounded: one import, one reader, then it stops.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { zipSync } from 'fflate'
import { choiceFlag, wholeNumberFlag } from './cli-flags.ts'
import { backendFromEnv } from './harness/backend.ts'
import { generateExport } from './harness/chatgpt-export.ts'
import { readRss, sampleRss } from './harness/rss.ts'
import { startServer } from './harness/server.ts'

const megabytes = wholeNumberFlag('megabytes', 64, { min: 1, max: 4096 })
const format = choiceFlag('format', ['json', 'zip'])
const maxBytes = megabytes * 2 ** 20
const backend = backendFromEnv(process.env)
// Embedded: DATA_DIR on disk, as deployed; `memory` keeps the database itself in the process.
const database = choiceFlag('database', ['disk', 'memory'])
const onDisk = database === 'disk' && !backend.databaseUrl.startsWith('postgres')
const READ_EVERY_MS = 200

const mib = (bytes: number | undefined) =>
  bytes === undefined ? 'n/a' : (bytes / 2 ** 20).toFixed(0)
const percentile = (sorted: number[], p: number) =>
  sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number)

const { file: json, count } = generateExport(maxBytes)
// A zip as chatgpt.com's data export is: conversations.json beside other files.
const body =
  format === 'zip'
    ? zipSync({ 'conversations.json': json, 'user.json': new TextEncoder().encode('{}') })
    : json
const dataDir = onDisk ? mkdtempSync(join(tmpdir(), 'conduit-import-')) : undefined
const server = await startServer({
  backend,
  chunkDelayMs: 0,
  ...(dataDir ? { dataDir } : {}),
  env: { IMPORT_MAX_BYTES: String(maxBytes) },
  startTimeoutMs: 120_000,
})

/** Times a cheap request every READ_EVERY_MS until `done` settles. */
async function readDuring(url: string, done: Promise<unknown>) {
  const waits: number[] = []
  let finished = false
  void done.finally(() => {
    finished = true
  })
  while (!finished) {
    const started = performance.now()
    const response = await fetch(url, { signal: AbortSignal.timeout(300_000) })
    await response.arrayBuffer()
    if (!response.ok) throw new Error(`${url} answered ${response.status}`)
    waits.push(performance.now() - started)
    await Promise.race([Bun.sleep(READ_EVERY_MS), done.catch(() => {})])
  }
  return waits.sort((a, b) => a - b)
}

try {
  // Warm: the first /docs/json builds the document; the import route's code is loaded.
  await fetch(`${server.url}/docs/json`).then((response) => response.arrayBuffer())
  Bun.gc(true)
  await Bun.sleep(2_000)
  const before = readRss(server.pid)
  const sampler = sampleRss(server.pid, 50)
  const started = performance.now()
  // The course of it, on stderr: whether memory grows with the file or stays put.
  const course = setInterval(() => {
    const seconds = ((performance.now() - started) / 1000).toFixed(0)
    console.error(`${seconds} s: server RSS ${mib(readRss(server.pid))} MiB`)
  }, 5_000)
  const importing = fetch(`${server.url}/backend-api/conversations/import`, {
    method: 'POST',
    headers: {
      'x-user-id': `import-bench-${Date.now()}`,
      'content-type': format === 'zip' ? 'application/zip' : 'application/json',
    },
    body,
    signal: AbortSignal.timeout(3_600_000),
  }).then(async (response) => {
    const text = await response.text()
    if (response.status !== 200) throw new Error(`import answered ${response.status}: ${text}`)
    return JSON.parse(text) as { imported: number; skipped: unknown[] }
  })
  const [docs, report] = await Promise.all([
    readDuring(`${server.url}/docs/json`, importing),
    importing,
  ])
  const seconds = (performance.now() - started) / 1000
  clearInterval(course)
  const rss = sampler.stop()
  await Bun.sleep(5_000)
  const settled = readRss(server.pid)
  if (report.imported !== count)
    throw new Error(`imported ${report.imported} of ${count} conversations`)
  const where = backend.databaseUrl.startsWith('postgres')
    ? 'Postgres (DATABASE_URL)'
    : dataDir
      ? 'embedded, DATA_DIR on disk'
      : 'embedded, DATABASE_URL=memory://'
  console.log(
    [
      `## Import of ${mib(body.length)} MiB (${format}, ${count} conversations), ${where}`,
      '',
      '| what | value |',
      '|---|--:|',
      `| import time s | ${seconds.toFixed(1)} |`,
      `| conversations/s | ${(count / seconds).toFixed(0)} |`,
      `| server RSS before MiB | ${mib(before)} |`,
      `| server RSS peak MiB | ${mib(rss.peak)} |`,
      `| RSS growth (peak - before) MiB | ${mib((rss.peak ?? 0) - (before ?? 0))} |`,
      `| server RSS 5 s after MiB | ${mib(settled)} |`,
      `| GET /docs/json during the import: count | ${docs.length} |`,
      `| … median ms | ${percentile(docs, 0.5).toFixed(0)} |`,
      `| … p99 ms | ${percentile(docs, 0.99).toFixed(0)} |`,
      `| … max ms | ${(docs.at(-1) ?? Number.NaN).toFixed(0)} |`,
    ].join('\n'),
  )
} finally {
  await server.stop()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
}
process.exit(0)
