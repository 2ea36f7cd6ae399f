// Socket writes and reads a send costs the server, counted rather than timed
// (so two commits compare on a noisy machine): it starts the service on the
// real backends (DATABASE_URL, REDIS_URL) with the local model at full speed,
// runs the send + stream scenario (10 clients, closed loop) for a warm-up,
// then traces the server's sendto/recvfrom/write calls with strace for a few
// seconds of the same load and reports them per turn, by peer: the HTTP
// clients, Postgres (5432), Redis (6379), and other descriptors (the event
// loop's eventfd, the log's pipe). Needs strace (Linux).
//
// With --streams=N it traces many streams instead (issue #30's per-item
// cost): N sends started 5 ms apart, the local model at 100 ms a chunk (a
// 48-word message: about 60 items a reply), each read to [DONE]; the calls
// are reported per streamed item as well as per turn.
//
//   DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?search_path=bench,public' \
//   REDIS_URL=redis://127.0.0.1:6379/12 bun run bench/send-writes.ts [--seconds=3] [--streams=300]
import { readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { wholeNumberFlag } from './cli-flags.ts'
import { backendFromEnv } from './harness/backend.ts'
import { runSendStream } from './harness/send-stream.ts'
import { startServer } from './harness/server.ts'
import { sendAndStream } from './harness/sse-client.ts'

const seconds = Math.max(1, wholeNumberFlag('seconds', 3, { min: 1, max: 60 }))
const streams = wholeNumberFlag('streams', 0, { min: 0, max: 2_000 })
const STREAM_CHUNK_DELAY_MS = 100
const STREAM_START_EVERY_MS = 5
const STREAM_MESSAGE = Array.from({ length: 48 }, (_, i) => `word${i}`).join(' ')
const backend = backendFromEnv(process.env)
if (!backend.databaseUrl.startsWith('postgres') || !backend.redisUrl)
  throw new Error('set DATABASE_URL and REDIS_URL to loopback Postgres and Redis (see the header)')
const PEERS: Record<string, string> = {
  [new URL(backend.databaseUrl).port || '5432']: 'postgres',
  [new URL(backend.redisUrl).port || '6379']: 'redis',
}

/**
 * Descriptors below this are the server's own (stdio, the loop, the pools'
 * sockets, opened before the run); a stream's, gone from `ss` once it
 * closed, is above it.
 */
const STORE_FDS_BELOW = 30

/** The server's TCP descriptors by what they talk to, from `ss`. */
function descriptorPeers(pid: number): Map<string, string> {
  const peers = new Map<string, string>()
  const listing = Bun.spawnSync(['ss', '-tnpH', 'state', 'established']).stdout.toString()
  for (const line of listing.split('\n')) {
    if (!line.includes(`pid=${pid},`)) continue
    const peerPort = line.trim().split(/\s+/)[3]?.split(':').pop() ?? ''
    for (const [, fd] of line.matchAll(new RegExp(`pid=${pid},fd=(\\d+)`, 'g')))
      peers.set(fd ?? '', PEERS[peerPort] ?? 'http clients')
  }
  return peers
}

/** N streams as the header says: how many completed, and their append items. */
async function runStreams(
  url: string,
  runId: string,
): Promise<{ completed: number; items: number }> {
  const results = await Promise.all(
    Array.from({ length: streams }, async (_, index) => {
      await Bun.sleep(index * STREAM_START_EVERY_MS)
      return sendAndStream({
        baseUrl: url,
        userId: `${runId}-${index}`,
        text: STREAM_MESSAGE,
        timeoutMs: 60_000,
      })
    }),
  )
  const done = results.filter((result) => result.done)
  return {
    completed: done.length,
    items: done.reduce((sum, result) => sum + result.appendItems, 0),
  }
}

const server = await startServer({
  backend,
  chunkDelayMs: streams > 0 ? STREAM_CHUNK_DELAY_MS : 0,
})
const trace = join(tmpdir(), `send-writes-${process.pid}.txt`)
try {
  await runSendStream(server.url, `writes-warm-${Date.now()}`, { concurrency: 10, durationSec: 2 })
  const strace = Bun.spawn(
    [
      'strace',
      '-f',
      '-e',
      'trace=sendto,recvfrom,write,writev,sendmsg',
      '-o',
      trace,
      '-p',
      `${server.pid}`,
    ],
    { stderr: 'ignore' },
  )
  await Bun.sleep(500) // strace attaches to every thread
  const run =
    streams > 0
      ? await runStreams(server.url, `writes-${Date.now()}`)
      : {
          ...(await runSendStream(server.url, `writes-${Date.now()}`, {
            concurrency: 10,
            durationSec: seconds,
          })),
          items: 0,
        }
  // A stream's connection is closed by now: its descriptor is gone from `ss`.
  const peers = descriptorPeers(server.pid)
  strace.kill('SIGINT')
  await strace.exited
  const counts = new Map<string, number>()
  for (const line of readFileSync(trace, 'utf8').split('\n')) {
    const call = /^\d+\s+(\w+)\((\d+),/.exec(line)
    if (!call) continue
    const key = `${call[1]} ${peers.get(call[2] ?? '') ?? (streams > 0 && Number(call[2]) > STORE_FDS_BELOW ? 'http clients' : `fd ${call[2]}`)}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  console.log(
    `${run.completed} turns traced${streams > 0 ? `, ${run.items} append items` : ''} (strace slows the server: count, do not time)`,
  )
  console.log(
    streams > 0
      ? '| call | per turn | per item |\n|---|--:|--:|'
      : '| call | per turn |\n|---|--:|',
  )
  for (const [key, count] of [...counts].sort((a, b) => b[1] - a[1]))
    console.log(
      `| ${key} | ${(count / Math.max(1, run.completed)).toFixed(2)} |${streams > 0 ? ` ${(count / Math.max(1, run.items)).toFixed(3)} |` : ''}`,
    )
} finally {
  await server.stop()
  rmSync(trace, { force: true })
}
