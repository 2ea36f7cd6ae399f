// The state of turns that is not a copy of anything (CONTRACT §13): turn logs,
// leases, stop requests, and the counter variant's count. It lives apart from
// the cache, so `DELETE /cache` and a cache flush never reach it: in-process
// for the embedded defaults, or in Redis under a role prefix of its own
// (REDIS_STATE_PREFIX; on REDIS_URL's database unless REDIS_STATE_URL names
// another, or on a Sentinel-managed primary or a Cluster).
import { randomBytes } from 'node:crypto'
import { type RedisConnector, redisConnector } from '../storage/redis-connections.ts'
import type { ConversationLeases } from './conversation-leases.ts'
import { secretKey } from './keyspace.ts'
import { createMemoryLeases } from './memory-leases.ts'
import { createMemoryStopChannel } from './memory-stop-channel.ts'
import { createMemoryTurnLogs } from './memory-turn-logs.ts'
import { createRedisLeases } from './redis-leases.ts'
import { createRedisStopChannel } from './redis-stop-channel.ts'
import { createRedisTurnLogs } from './redis-turn-logs.ts'
import type { StopChannel } from './stop-channel.ts'
import type { TurnLogStore } from './turn-log-store.ts'

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
   * nothing): past it the command fails, and the request is refused as unavailable.
   */
  commandTimeoutMs?: number
}

/** A state command's deadline unless told otherwise: generous, since logs and leases are not optional. */
export const STATE_COMMAND_TIMEOUT_MS = 2_000

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
  const connector = typeof target === 'string' ? redisConnector(target) : target
  const redis = connector.connect({
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    // Blocking reads use a connection of their own without this deadline (redis-log-follower.ts).
    commandTimeout: options.commandTimeoutMs ?? STATE_COMMAND_TIMEOUT_MS,
    // Commands issued in one loop turn (renewals, log batches) share a socket write.
    coalesceWrites: true,
  })
  redis.on('error', () => {})
  try {
    await redis.ping()
    const logs = createRedisTurnLogs({
      redis,
      keyPrefix: `${prefix}turnlog:`,
      retentionMs: options.retentionMs,
    })
    const leases = createRedisLeases({ redis, keyPrefix: prefix })
    const stops = await createRedisStopChannel({ redis, keyPrefix: prefix, report: options.warn })
    return {
      kind: 'redis',
      logs,
      leases,
      stops,
      async sharedSecret(name) {
        const key = secretKey(prefix, name)
        await redis.set(key, randomBytes(32).toString('hex'), 'NX')
        const secret = await redis.get(key)
        if (secret === null)
          throw new Error(`the shared secret ${name} vanished from the state store`)
        return secret
      },
      async ping() {
        await redis.ping()
      },
      async close() {
        await Promise.all([logs.close(), leases.close(), stops.close()])
        redis.disconnect()
      },
    }
  } catch (error) {
    redis.disconnect()
    throw error
  }
}
