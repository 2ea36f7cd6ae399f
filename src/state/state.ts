// The state of turns that is not a copy of anything (CONTRACT §13): turn logs,
// leases, stop requests, and the counter variant's count. It lives apart from
// the cache, so `DELETE /cache` and a cache flush never reach it: in-process
// for the embedded defaults, or in Redis under a role prefix of its own
// (REDIS_STATE_PREFIX; on REDIS_URL's database unless REDIS_STATE_URL names
// another, or on a Sentinel-managed primary or a Cluster).
import { randomBytes } from 'node:crypto'
import { secretKey } from '../storage/keyspace.ts'
import { type RedisConnector, redisConnector } from '../storage/redis-connections.ts'
import {
  type BreakerLink,
  createStoreBreaker,
  STATE_DEADLINE_MS,
  type StoreBreaker,
  StoreUnavailableError,
} from '../storage/store-breaker.ts'
import type { StoreFailurePolicy } from '../storage/store-failure.ts'
import type { ConversationLeases } from './conversation-leases.ts'
import { createMemoryLeases } from './memory-leases.ts'
import { createMemoryStopChannel } from './memory-stop-channel.ts'
import { createRedisLeases } from './redis-leases.ts'
import { createRedisStopChannel } from './redis-stop-channel.ts'
import { gateLeases, gateStops, gateTurnLogs, reporting } from './state-gate.ts'
import type { StopChannel } from './stop-channel.ts'
import { createMemoryTurnLogs } from './turn-log/memory-turn-logs.ts'
import { createRedisTurnLogs } from './turn-log/redis-turn-logs.ts'
import type { TurnLogStore } from './turn-log/turn-log-store.ts'

export interface State {
  readonly kind: 'redis' | 'memory'
  logs: TurnLogStore
  leases: ConversationLeases
  stops: StopChannel
  /**
   * The resume-token secret every instance on this state shares: created once
   * by whichever instance asks first, unless one is configured.
   */
  sharedSecret(name: string): Promise<string>
  /**
   * The state Redis's deadline and breaker (store-breaker.ts), opened by any
   * state command that missed its deadline or lost its connection: the calls
   * on a request's path (state-gate.ts, the rate limits) ask it first and
   * answer at once while it is open. Absent for the in-process state, which
   * cannot fail.
   */
  readonly breaker?: StoreBreaker
  /** Resolves when the state store answers (readiness); throws otherwise. */
  ping(): Promise<void>
  close(): Promise<void>
}

export interface StateOptions {
  /** How long a finished turn's stream stays resumable. */
  retentionMs: number
  /** The role prefix of every key and channel (REDIS_STATE_PREFIX; tests use a random one). */
  keyPrefix?: string
  /** Told of failures nobody waits for (a stop listener that throws). */
  warn?: (message: string, error: unknown) => void
  /**
   * Longest one state command may wait for Redis (a frozen server answers
   * nothing): past it the command fails, and the request is refused as
   * unavailable. STATE_DEADLINE_MS unless told otherwise.
   */
  commandTimeoutMs?: number
  /** Told when the state's breaker opens and closes, for logs. */
  onStateChange?: (state: 'open' | 'closed', cause?: unknown) => void
  /** The cache's breaker when it is on the same Redis (store-breaker.ts, BreakerLink). */
  breakerLink?: BreakerLink
  /** What a failure says about the state store (store-failure.ts); every failure opens the breaker when absent. */
  failures?: StoreFailurePolicy
}

export function createMemoryState(options: StateOptions): State {
  const logs = createMemoryTurnLogs({ retentionMs: options.retentionMs })
  const leases = createMemoryLeases()
  const stops = createMemoryStopChannel(options.warn)
  const secrets = new Map<string, string>()
  return {
    kind: 'memory',
    logs,
    leases,
    stops,
    async sharedSecret(name) {
      const secret = secrets.get(name) ?? randomBytes(32).toString('hex')
      secrets.set(name, secret)
      return secret
    },
    async ping() {},
    async close() {
      await Promise.all([logs.close(), leases.close(), stops.close()])
    },
  }
}

/** Connects to the state's Redis (a redis:// URL, or any deployment); fails when it does not answer. */
export async function openRedisState(
  target: string | RedisConnector,
  options: StateOptions,
): Promise<State> {
  const prefix = options.keyPrefix ?? ''
  const timeoutMs = options.commandTimeoutMs ?? STATE_DEADLINE_MS
  const connector = typeof target === 'string' ? redisConnector(target) : target
  const redis = connector.connect({
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    // Blocking reads use a connection of their own without this deadline (redis-log-follower.ts).
    commandTimeout: timeoutMs,
    // The commands of one loop turn (every turn's lease renewals, log reads,
    // stop flags) go out in one socket write.
    enableAutoPipelining: true,
  })
  redis.on('error', () => {})
  // Every state call opens the breaker when it misses its deadline or loses
  // the connection (state-gate.ts), and so does a lost connection itself; only
  // the calls a request waits for consult it (state-gate.ts, the rate
  // limits): a running turn's log writes and lease renewals must not fail
  // faster than Redis does.
  const breaker = createStoreBreaker({
    store: 'state',
    timeoutMs,
    probe: () => redis.ping(),
    onStateChange: options.onStateChange,
    link: options.breakerLink,
    ...(options.failures ? { failures: options.failures } : {}),
  })
  // On a Cluster this is the whole client: a lost node shows in the commands routed to it.
  redis.on('close', () =>
    breaker.trip(new StoreUnavailableError('state', 'the connection was lost')),
  )
  try {
    await redis.ping()
    const logs = createRedisTurnLogs({
      redis,
      keyPrefix: `${prefix}turnlog:`,
      retentionMs: options.retentionMs,
      ...(options.warn ? { warn: options.warn } : {}),
    })
    const leases = createRedisLeases({ redis, keyPrefix: prefix })
    const stops = await createRedisStopChannel({ redis, keyPrefix: prefix, report: options.warn })
    return {
      kind: 'redis',
      // Every call reports outages to the breaker; those only a request waits for are refused while it is open.
      logs: gateTurnLogs(logs, breaker),
      leases: gateLeases(leases, breaker),
      stops: gateStops(stops, breaker),
      breaker,
      sharedSecret: reporting(breaker, async (name: string) => {
        const key = secretKey(prefix, name)
        await redis.set(key, randomBytes(32).toString('hex'), 'NX')
        const secret = await redis.get(key)
        if (secret === null)
          throw new Error(`the shared secret ${name} vanished from the state store`)
        return secret
      }),
      ping: reporting(breaker, async () => {
        await redis.ping()
      }),
      async close() {
        await Promise.all([logs.close(), leases.close(), stops.close()])
        breaker.close()
        redis.disconnect()
      },
    }
  } catch (error) {
    breaker.close()
    redis.disconnect()
    throw error
  }
}
