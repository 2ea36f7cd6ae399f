// The SQL one send runs, captured from the service itself: the real
// conversation service in this process, on the benchmarked Postgres through a
// recording Db, with the state store the benchmarked server uses. It sends two
// messages to new conversations as one user and keeps the second (the steady
// state: the user row exists), including what the runner does after [DONE],
// so the pgbench ceiling (pgbench.ts) and the stack reference (bare-sends.ts)
// replay exactly what a turn costs the database, whatever the turn code does
// today. The second send's SSE reply is kept too: the stack reference answers
// with it. With Redis, the Redis commands of that send are captured as well
// (turn-redis-commands.ts: its turn state, and its cache on the Redis of
// REDIS_URL as the server's is), for the stack reference to replay.
import { randomBytes } from 'node:crypto'
import { createApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createLocalModel } from '../../src/conversation/model/local.ts'
import { createConversationService } from '../../src/conversation/service.ts'
import { createMemoryState, openRedisState } from '../../src/state/state.ts'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db, Queryable } from '../../src/storage/db.ts'
import { createMemoryCache } from '../../src/storage/memory-cache.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { createRedisCache } from '../../src/storage/redis-cache.ts'
import { NO_DEADLINE, withDeadlineParameter } from '../../src/storage/statement-deadline.ts'
import type { Backend } from './backend.ts'
import { sendBody } from './sse-client.ts'
import { type CapturedCommand, monitorCommands } from './turn-redis-commands.ts'

export type Step =
  | { kind: 'begin' }
  | { kind: 'commit' }
  | { kind: 'query'; text: string; params: unknown[] }

function recording(db: Db, steps: Step[]): Db {
  const recorded = (target: Queryable): Queryable => ({
    query(text, params = []) {
      // A replay has no deadline to keep: the statement's check still runs, never failing.
      steps.push({ kind: 'query', text, params: withDeadlineParameter(params, NO_DEADLINE) })
      return target.query(text, params)
    },
    exec(script) {
      steps.push({ kind: 'query', text: script, params: [] })
      return target.exec(script)
    },
  })
  return {
    ...db,
    ...recorded(db),
    transaction: (fn) =>
      db.transaction(async (tx) => {
        steps.push({ kind: 'begin' })
        const result = await fn(recorded(tx))
        steps.push({ kind: 'commit' })
        return result
      }),
  }
}

export interface CapturedTurn {
  steps: Step[]
  /** The user of the captured sends, and of every turn pgbench replays. */
  userId: string
  /** The SSE body the service answered the captured send with, [DONE] included. */
  reply: string
  /** The Redis commands of the send, in the order Redis ran them (none without Redis). */
  redisCommands: CapturedCommand[]
  /** The key prefix every captured command's keys carry (the replay puts its own there). */
  keyPrefix: string
}

/** The statements of one send to a new conversation by a user who sent before. */
export async function captureTurnStatements(backend: Backend): Promise<CapturedTurn> {
  const steps: Step[] = []
  const db = createPostgresDb(backend.databaseUrl, { max: 4 })
  const keyPrefix = `bench-capture-${randomBytes(4).toString('hex')}:`
  const state = backend.stateUrl
    ? await openRedisState(backend.stateUrl, { retentionMs: 600_000, keyPrefix })
    : createMemoryState({ retentionMs: 600_000 })
  const config = loadConfig({ LOCAL_MODEL_CHUNK_DELAY_MS: '0' })
  const cache: Cache = backend.redisUrl
    ? createRedisCache(backend.redisUrl, { keyPrefix })
    : createMemoryCache()
  // MONITOR shows every database of a server: one per server.
  const servers = new Map<string, string>()
  for (const url of [backend.stateUrl, backend.redisUrl])
    if (url) servers.set(new URL(url).host, url)
  const conversations = createConversationService({
    db: recording(db, steps),
    cache,
    model: createLocalModel({ slug: 'local-echo', chunkDelayMs: 0 }),
    resumeTokenSecret: randomBytes(16).toString('hex'),
    logs: state.logs,
    leases: state.leases,
    stops: state.stops,
    leaseMs: config.turnLeaseMs,
    maxConversations: 10,
    warn: () => {},
  })
  const app = createApp({ config, db, cache, conversations })
  const userId = `bench-capture-${randomBytes(4).toString('hex')}`
  const send = async (text: string) => {
    const response = await app.handle(
      new Request('http://localhost/backend-api/f/conversation', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: sendBody(userId, text),
      }),
    )
    const body = await response.text()
    if (!body.includes('data: [DONE]'))
      throw new Error(`capturing a turn failed: ${body.slice(0, 300)}`)
    await conversations.whenIdle()
    return body
  }
  try {
    await send('Streaming benchmark turn 0: please answer with a few words.')
    steps.length = 0
    const monitors = await Promise.all(
      [...servers.values()].map((url) => monitorCommands(url, keyPrefix)),
    )
    const reply = await send('Streaming benchmark turn 1: please answer with a few words.')
    const redisCommands = (await Promise.all(monitors.map((monitor) => monitor.stop()))).flat()
    return { steps: [...steps], userId, reply, redisCommands, keyPrefix }
  } finally {
    await conversations.close()
    await state.close()
    await cache.close()
    await db.close()
  }
}
