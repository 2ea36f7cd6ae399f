// The near cache's invalidation feed on a real Redis: server-assisted
// client-side caching. One connection asks Redis to broadcast every change to
// keys under the given prefixes (CLIENT TRACKING on BCAST PREFIX …, whoever
// makes the change, expiry included; FLUSHDB as a null message) and to
// redirect those messages to itself, then subscribes to __redis__:invalidate.
// It speaks RESP2 because ioredis drops RESP3 `invalidate` pushes. Tracking
// lives and dies with the connection: a drop is reported at once, and after a
// reconnect (to a new primary, after a Sentinel failover) tracking is set up
// again before connected() is said. Not for a Cluster: tracking is per node,
// and the service runs without a near cache there (dependencies.ts).
//
// A frozen server or a network that holds packets drops nothing, so the feed
// also asks: every sync's PING has the cache's deadline (store-breaker.ts),
// and an idle feed PINGs every heartbeatMs. A PING past its deadline means
// changes may no longer reach this process: the feed reports itself
// disconnected (the near tier then keeps and serves nothing), and reconnects,
// to track again once the server answers. So no write waits on a frozen feed
// longer than one deadline, and an instance that only serves near hits stops
// within a heartbeat and a deadline.
import { cacheKeyOf } from './keyspace.ts'
import type { InvalidationFeed, InvalidationListener } from './near-cache.ts'
import { isCluster, type RedisConnector, redisConnector } from './redis-connections.ts'
import { withDeadline } from './store-breaker.ts'

const CHANNEL = '__redis__:invalidate'

export interface RedisInvalidationsOptions {
  /** Key prefixes to report, as the service names keys. */
  prefixes: readonly string[]
  /** The shared cache's role prefix, prepended on Redis and cut from reports. */
  keyPrefix?: string
  /** CLIENT SETNAME of the tracking connection, to find it in CLIENT LIST. */
  connectionName?: string
  /** Longest a sync's PING may wait (CACHE_TIMEOUT_MS); past it the feed counts as down. Default 500. */
  timeoutMs?: number
  /** How often an idle feed checks that its connection still answers; 0 (the default) = never. */
  heartbeatMs?: number
}

export function openRedisInvalidations(
  target: string | RedisConnector,
  options: RedisInvalidationsOptions,
): InvalidationFeed {
  const keyPrefix = options.keyPrefix ?? ''
  const timeoutMs = options.timeoutMs ?? 500
  const connector = typeof target === 'string' ? redisConnector(target) : target
  const client = connector.connect({
    protocol: 2,
    connectionName: options.connectionName ?? 'conduit-near-cache',
    // Subscribing again is not enough after a reconnect: tracking must come first.
    autoResubscribe: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  })
  if (isCluster(client)) {
    client.disconnect()
    throw new Error('a near cache needs one Redis primary, not a Cluster')
  }
  const redis = client
  let listener: InvalidationListener | undefined
  let tracking = false
  let closed = false
  /** The PING the syncs of this loop turn wait for, until it is sent (sharedPing). */
  let turnPing: Promise<void> | undefined

  async function startTracking() {
    try {
      const id = await redis.client('ID')
      // A key without a hash tag is stored as {key} (keyspace.ts): both forms are followed.
      const prefixes = options.prefixes
        .flatMap((prefix) =>
          prefix === '' ? [keyPrefix] : [keyPrefix + prefix, `${keyPrefix}{${prefix}`],
        )
        .flatMap((prefix) => ['PREFIX', prefix])
      await redis.call('CLIENT', 'TRACKING', 'on', 'REDIRECT', String(id), 'BCAST', ...prefixes)
      await redis.subscribe(CHANNEL)
      tracking = true
      listener?.connected()
    } catch {
      // A connection that cannot track is of no use: drop it and let ioredis reconnect.
      if (!closed) redis.disconnect(true)
    }
  }

  // Connection errors show as a drop below; without a listener ioredis logs each one.
  redis.on('error', () => {})
  redis.on('ready', () => void startTracking())
  redis.on('close', () => {
    tracking = false
    listener?.disconnected()
  })
  redis.on('messageBuffer', (channel: Buffer, payload: unknown) => {
    if (String(channel) !== CHANNEL) return
    // A flush is reported as a message without keys.
    if (!Array.isArray(payload)) return listener?.flushed()
    const keys: string[] = []
    for (const raw of payload) {
      const key = cacheKeyOf(keyPrefix, String(raw))
      if (key !== undefined) keys.push(key)
    }
    listener?.changed(keys)
  })

  /** The connection missed a deadline: changes may go unreported. Track again on a new one. */
  function stalled() {
    if (!tracking || closed) return
    tracking = false
    listener?.disconnected()
    redis.disconnect(true)
  }

  const heartbeat =
    (options.heartbeatMs ?? 0) > 0
      ? setInterval(() => void sync().catch(() => {}), options.heartbeatMs)
      : undefined
  heartbeat?.unref?.()

  async function sync(): Promise<void> {
    if (!tracking) return
    turnPing ??= sharedPing()
    await turnPing
  }

  /**
   * One PING for the syncs of a loop turn. Replies and messages share the
   * connection, in order: the answer to a PING comes after every
   * invalidation of changes made before it was sent, and Redis has sent
   * those to every other tracking connection by then too. A sync is asked
   * once its change was acknowledged, so it may share a PING not sent yet,
   * never one already sent: turnPing is reset as the PING leaves. Sent from
   * setImmediate, once the loop has run the I/O callbacks at hand, it serves
   * the syncs of every acknowledgement that arrived together. The syncs
   * resume one loop turn after the answer, so that other connections of
   * this process whose invalidations arrived with it (another near cache, as
   * in tests) have been read by then.
   */
  function sharedPing(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      setImmediate(() => {
        turnPing = undefined
        withDeadline(() => redis.ping(), timeoutMs, 'cache').then(
          () => setImmediate(resolve),
          reject,
        )
      })
    }).catch((error: unknown) => {
      stalled()
      throw error
    })
  }

  return {
    listen(next) {
      listener = next
      if (tracking) next.connected()
    },
    sync,
    async close() {
      closed = true
      clearInterval(heartbeat)
      tracking = false
      listener?.disconnected()
      listener = undefined
      redis.disconnect()
    },
  }
}
