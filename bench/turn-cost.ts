// What one turn costs, counted rather than timed, so it can be compared on a
// busy machine: SQL statements per turn (by statement), Redis commands and
// Redis time per item streamed (per log item), and this process's CPU per turn. It runs the
// whole app in this process (requests through app.handle, no sockets) on the
// Postgres of DATABASE_URL (whose backends serving this run are found by their
// application_name, for their CPU time) and on a private redis-server started here on a
// free loopback port (database 0 the cache, 1 the turn state), so Redis's
// counters hold nothing but this run.
//
//   DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?search_path=bench,public' \
//     bun run bench/turn-cost.ts [--turns=600] [--concurrency=200] [--chunk-delay=20] [--words=48]
//       [--state=redis|memory] [--cache=redis|memory]
//
// `--concurrency` turns run at once, each a new conversation with a message of
// `--words` words (the local model answers about 1.2 chunks per word), so one
// log batch holds items of many logs, as under load. `--state=memory` or
// `--cache=memory` put the turn state or the cache in this process, to measure
// by elimination what their Redis round trips cost; two runs with different
// `--words` split a turn's CPU into a fixed part and a part per item.
import Redis from 'ioredis'
import { createApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { createConversationService } from '../src/conversation/service.ts'
import { openModel } from '../src/dependencies.ts'
import { createMemoryState, openRedisState } from '../src/state/state.ts'
import type { Db, Queryable, Row } from '../src/storage/db.ts'
import { createMemoryCache } from '../src/storage/memory-cache.ts'
import { migrate } from '../src/storage/migrate.ts'
import { createPostgresDb } from '../src/storage/postgres.ts'
import { createRedisCache } from '../src/storage/redis-cache.ts'
import { choiceFlag, wholeNumberFlag } from './cli-flags.ts'
import { startMeterRedis } from './meter-redis.ts'

const turns = wholeNumberFlag('turns', 600, { min: 0, max: 100_000 })
const concurrency = Math.max(1, wholeNumberFlag('concurrency', 200, { min: 0, max: 100_000 }))
const chunkDelayMs = wholeNumberFlag('chunk-delay', 20, { min: 0, max: 100_000 })
const words = Math.max(1, wholeNumberFlag('words', 48, { min: 0, max: 100_000 }))
const stateKind = choiceFlag('state', ['redis', 'memory'])
const cacheKind = choiceFlag('cache', ['redis', 'memory'])
const databaseUrl = process.env.DATABASE_URL
const databaseHost = databaseUrl ? new URL(databaseUrl).hostname : ''
if (!databaseUrl || !['127.0.0.1', 'localhost', '[::1]'].includes(databaseHost))
  throw new Error('set DATABASE_URL to a loopback Postgres (see the header of this file)')

/** The statement's kind: its first words, parameters and all, whitespace folded. */
const statementKind = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 70)

/** The database, counting every statement (BEGIN and COMMIT of a transaction included). */
function countingDb(db: Db, counts: Map<string, number>): Db {
  const count = (kind: string) => counts.set(kind, (counts.get(kind) ?? 0) + 1)
  const wrap = (target: Queryable): Queryable => ({
    query<T extends Row = Row>(text: string, params?: readonly unknown[]) {
      count(statementKind(text))
      return target.query<T>(text, params)
    },
    exec(script) {
      count(statementKind(script))
      return target.exec(script)
    },
  })
  return {
    ...db,
    ...wrap(db),
    transaction(fn) {
      count('BEGIN')
      count('COMMIT')
      return db.transaction((tx) => fn(wrap(tx)))
    },
  }
}

interface RedisCounters {
  commands: Map<string, { calls: number; usec: number }>
  cpuSeconds: number
}

async function redisCounters(redis: Redis): Promise<RedisCounters> {
  const [stats, cpu] = await Promise.all([redis.info('commandstats'), redis.info('cpu')])
  const commands = new Map<string, { calls: number; usec: number }>()
  for (const match of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm))
    commands.set(match[1] ?? '', { calls: Number(match[2]), usec: Number(match[3]) })
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0)
  return { commands, cpuSeconds: field('used_cpu_user') + field('used_cpu_sys') }
}

const redisServer = await startMeterRedis()
const { port } = redisServer
// Retries until the new server listens; commands wait in the offline queue.
const admin = new Redis({ port, host: '127.0.0.1', retryStrategy: () => 50 })
admin.on('error', () => {})
await admin.ping()

/** CPU seconds of the Postgres backends serving this run (by application_name), by pid. */
async function postgresCpu(db: Db, applicationName: string): Promise<Map<number, number>> {
  const rows = await db.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE application_name = $1',
    [applicationName],
  )
  const seconds = new Map<number, number>()
  for (const { pid } of rows) {
    const stat = await Bun.file(`/proc/${pid}/stat`)
      .text()
      .catch(() => '')
    // Fields after the command name: utime and stime are the 12th and 13th, in clock ticks (100/s).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    seconds.set(pid, (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) / 100)
  }
  return seconds
}

const counts = new Map<string, number>()
const applicationName = `turn-cost-${port}`
const url = new URL(databaseUrl)
url.searchParams.set('application_name', applicationName)
const rawDb = createPostgresDb(url.toString())
await migrate(rawDb)
const db = countingDb(rawDb, counts)
const config = loadConfig({
  LOCAL_MODEL_CHUNK_DELAY_MS: String(chunkDelayMs),
  RESUME_TOKEN_SECRET: 'turn-cost-secret',
})
const cache =
  cacheKind === 'memory' ? createMemoryCache() : createRedisCache(`redis://127.0.0.1:${port}/0`)
const state =
  stateKind === 'memory'
    ? createMemoryState({ retentionMs: config.resumeRetentionMs })
    : await openRedisState(`redis://127.0.0.1:${port}/1`, { retentionMs: config.resumeRetentionMs })
const conversations = createConversationService({
  db,
  cache,
  model: openModel(config),
  resumeTokenSecret: 'turn-cost-secret',
  logs: state.logs,
  leases: state.leases,
  stops: state.stops,
  leaseMs: config.turnLeaseMs,
  maxConversations: config.maxRunningConversations,
  warn: (message, error) => console.error(message, error),
})
const app = createApp({ config, db, cache, conversations })
const message = Array.from({ length: words }, (_, index) => `word${index}`).join(' ')

/** One send to a new conversation, read to [DONE]; the number of items streamed (log items). */
async function turn(index: number): Promise<number> {
  const response = await app.handle(
    new Request('http://localhost/backend-api/f/conversation', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        user_id: `turn-cost-${port}-${index % 50}`,
        messages: [{ role: 'user', content: { content_type: 'text', parts: [message] } }],
      }),
    }),
  )
  const text = await response.text()
  if (response.status !== 200 || !text.includes('data: [DONE]'))
    throw new Error(`turn ${index}: status ${response.status}, no [DONE]`)
  return text.split('\n\n').filter((frame) => frame.includes('data:')).length
}

async function run(count: number): Promise<{ logItems: number; seconds: number }> {
  let next = 0
  let logItems = 0
  const started = performance.now()
  const worker = async () => {
    while (next < count) {
      const items = await turn(next++)
      logItems += items
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker))
  await conversations.whenIdle()
  return { logItems, seconds: (performance.now() - started) / 1000 }
}

try {
  await run(Math.min(100, turns)) // warm-up: JIT, pools, scripts
  counts.clear()
  await admin.config('RESETSTAT')
  const redisBefore = await redisCounters(admin)
  const pgBefore = await postgresCpu(rawDb, applicationName)
  const cpuBefore = process.cpuUsage()
  const { logItems, seconds } = await run(turns)
  const cpu = process.cpuUsage(cpuBefore)
  const redisAfter = await redisCounters(admin)
  const pgAfter = await postgresCpu(rawDb, applicationName)
  let pgSeconds = 0
  for (const [pid, seconds] of pgAfter) pgSeconds += seconds - (pgBefore.get(pid) ?? 0)
  const commands = [...redisAfter.commands]
    .filter(([name]) => name !== 'info' && name !== 'config')
    .map(([name, { calls, usec }]) => ({ name, calls, usec }))
    .sort((a, b) => b.calls - a.calls)
  const redisCalls = commands.reduce((sum, command) => sum + command.calls, 0)
  const statements = [...counts.values()].reduce((sum, n) => sum + n, 0)
  const result = {
    turns,
    concurrency,
    chunkDelayMs,
    state: stateKind,
    cache: cacheKind,
    logItemsPerTurn: +(logItems / turns).toFixed(1),
    seconds: +seconds.toFixed(1),
    processCpuMsPerTurn: +((cpu.user + cpu.system) / 1000 / turns).toFixed(2),
    processSystemCpuMsPerTurn: +(cpu.system / 1000 / turns).toFixed(2),
    sqlStatementsPerTurn: +(statements / turns).toFixed(2),
    // The backends' own CPU (not the WAL writer's or other shared processes').
    postgresCpuMsPerTurn: +((pgSeconds * 1000) / turns).toFixed(2),
    redisCommandsPerTurn: +(redisCalls / turns).toFixed(1),
    redisCommandsPerLogItem: +(redisCalls / logItems).toFixed(2),
    redisCpuUsecPerLogItem: +(
      ((redisAfter.cpuSeconds - redisBefore.cpuSeconds) * 1e6) /
      logItems
    ).toFixed(2),
    loadAverage: (await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' '),
  }
  console.log(JSON.stringify(result, null, 2))
  console.log('\nSQL statements per turn:')
  for (const [kind, n] of [...counts].sort((a, b) => b[1] - a[1]))
    console.log(`  ${(n / turns).toFixed(2).padStart(6)}  ${kind}`)
  console.log('\nRedis commands per turn (µs per call):')
  for (const { name, calls, usec } of commands)
    console.log(
      `  ${(calls / turns).toFixed(2).padStart(7)}  ${name} (${(usec / calls).toFixed(1)} µs)`,
    )
} finally {
  await conversations.close(0)
  await state.close()
  await cache.close()
  await rawDb.close()
  admin.disconnect()
  redisServer.stop()
}
