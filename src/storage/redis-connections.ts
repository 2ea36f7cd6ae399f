// The one place a Redis deployment becomes clients (CONTRACT §18): a single
// server (a redis:// URL), a primary managed by Sentinel (REDIS_SENTINELS,
// REDIS_SENTINEL_NAME) or a Cluster (REDIS_CLUSTER_NODES). Each is a way to
// build the same clients: the cache, the state and the rate limits ask a
// RedisConnector for a client with their own deadlines and never look at
// the deployment, except where a Cluster needs work split by slot
// (redis-slots.ts) or the near cache is off.
import Redis, { Cluster, type ClusterOptions, type RedisOptions } from 'ioredis'
import { reconnectsUnlessClosed, reconnectUnlessClosed } from './sentinel-reconnect.ts'
import { failUnfulfilledOnDrop } from './unfulfilled-on-drop.ts'

/** A client of any deployment: the commands are the same. */
export type RedisClient = Redis | Cluster

export interface HostPort {
  host: string
  port: number
}

/**
 * How a Sentinel-managed primary or a Cluster's nodes are reached beyond
 * their address (a single server's URL carries its own: redis://user:pass@…,
 * rediss:// for TLS): managed services ask for a password and TLS.
 */
export interface RedisAccess {
  username?: string
  password?: string
  /** TLS to the data nodes; `ca` is a PEM of a private CA (else the system's are trusted). */
  tls?: { ca?: string }
  /** Sentinel only: the Sentinels' own password. */
  sentinelPassword?: string
}

export type RedisDeployment =
  | { kind: 'server'; url: string }
  | { kind: 'sentinel'; sentinels: HostPort[]; name: string; access?: RedisAccess }
  | { kind: 'cluster'; nodes: HostPort[]; access?: RedisAccess }

/** What a client wants beyond where Redis is: deadlines and how it reconnects. */
export interface ClientOptions {
  commandTimeout?: number
  connectTimeout?: number
  maxRetriesPerRequest?: number | null
  retryStrategy?: (attempt: number) => number | null
  enableOfflineQueue?: boolean
  autoResendUnfulfilledCommands?: boolean
  autoResubscribe?: boolean
  protocol?: 2 | 3
  connectionName?: string
  /**
   * ioredis' auto-pipelining: the commands issued in one loop turn go out in
   * one socket write. Only for clients that never block: a blocking command
   * would hold up the others queued behind it. Never inherited by a duplicate
   * (duplicateClient); ignored on a Cluster (clusterOptions says why).
   */
  enableAutoPipelining?: boolean
  /** Cluster only: SSUBSCRIBE / SPUBLISH (Redis 7) go to the node of the channel's slot. */
  shardedSubscribers?: boolean
}

export interface RedisConnector {
  readonly kind: RedisDeployment['kind']
  /** A new client (connecting at once); the caller closes it. */
  connect(options?: ClientOptions): RedisClient
}

export const isCluster = (redis: RedisClient): redis is Cluster => redis instanceof Cluster

/**
 * Whether a and b are the same Redis servers (a database number or a key
 * prefix apart at most), so that one frozen or dead is the other too: the
 * same host and port, a Sentinel-managed primary of the same name watched by
 * a common Sentinel, or a Cluster with a common node.
 */
export function sameRedisDeployment(a?: RedisDeployment, b?: RedisDeployment): boolean {
  if (!a || !b) return false
  if (a === b) return true
  if (a.kind === 'server' && b.kind === 'server') return serverOf(a.url) === serverOf(b.url)
  if (a.kind === 'sentinel' && b.kind === 'sentinel')
    return a.name === b.name && shareAHost(a.sentinels, b.sentinels)
  if (a.kind === 'cluster' && b.kind === 'cluster') return shareAHost(a.nodes, b.nodes)
  return false
}

/** host:port of a redis:// or rediss:// URL. */
function serverOf(url: string): string {
  const parsed = new URL(url)
  return `${parsed.hostname.toLowerCase()}:${parsed.port || '6379'}`
}

const hostOf = ({ host, port }: HostPort) => `${host.toLowerCase()}:${port}`

function shareAHost(a: readonly HostPort[], b: readonly HostPort[]): boolean {
  const hosts = new Set(a.map(hostOf))
  return b.some((node) => hosts.has(hostOf(node)))
}

/** A redis:// URL is a single server; anything else is described. */
export function redisConnector(target: string | RedisDeployment): RedisConnector {
  const deployment: RedisDeployment =
    typeof target === 'string' ? { kind: 'server', url: target } : target
  return {
    kind: deployment.kind,
    connect(options = {}) {
      const { shardedSubscribers, ...rest } = options
      if (deployment.kind === 'cluster')
        return new Cluster(
          deployment.nodes,
          clusterOptions(rest, shardedSubscribers, dataNodeAccess(deployment.access)),
        )
      const redisOptions: RedisOptions = { ...rest, reconnectOnError: reconnectWhenReadOnly }
      if (deployment.kind === 'sentinel')
        return reconnectUnlessClosed(
          failUnfulfilledOnDrop(
            new Redis({
              ...redisOptions,
              ...dataNodeAccess(deployment.access),
              ...(deployment.access?.tls ? { enableTLSForSentinelMode: true } : {}),
              ...(deployment.access?.sentinelPassword
                ? { sentinelPassword: deployment.access.sentinelPassword }
                : {}),
              sentinels: deployment.sentinels,
              name: deployment.name,
              // Told of a new primary by the sentinels, rather than by failing
              // commands (and kept from ending by it: sentinel-reconnect.ts).
              failoverDetector: true,
              sentinelRetryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
            }),
          ),
        )
      return failUnfulfilledOnDrop(new Redis(deployment.url, redisOptions))
    },
  }
}

/** The options of a data node's connection that say who connects and how (none: plain, no AUTH). */
function dataNodeAccess(access: RedisAccess | undefined): RedisOptions {
  if (!access) return {}
  return {
    ...(access.username === undefined ? {} : { username: access.username }),
    ...(access.password === undefined ? {} : { password: access.password }),
    ...(access.tls ? { tls: access.tls.ca === undefined ? {} : { ca: access.tls.ca } } : {}),
  }
}

/**
 * A demoted primary (after a failover it comes back as a replica) answers
 * writes with READONLY: connect again, to whichever is primary now. The
 * command itself fails (it did not run), and its caller decides.
 */
const reconnectWhenReadOnly = (error: Error) => error.message.startsWith('READONLY')

/** A Cluster client's options: the per-node ones go to every node's connection. */
function clusterOptions(
  options: ClientOptions,
  shardedSubscribers?: boolean,
  access?: RedisOptions,
): ClusterOptions {
  const { retryStrategy, enableOfflineQueue, enableAutoPipelining: _never, ...rest } = options
  const perNode: RedisOptions = { ...rest, ...access }
  return {
    redisOptions: perNode,
    // With TLS a node is connected to by the name it was given, so that its
    // certificate is checked against that name (ElastiCache's advice).
    ...(perNode.tls ? { dnsLookup: (address, callback) => callback(null, address) } : {}),
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    // Never auto-pipelined (enableAutoPipelining is dropped): ioredis 6 sends
    // a tick's commands for one node as one pipeline and, when a failover has
    // moved some of their slots, retries only a pipeline whose commands all
    // failed alike - the others' MOVED reach the caller, and its slot map stays
    // on the old node (redis/ioredis#2075, open). Each command alone is
    // redirected and retried by ioredis. Measured here: sends refused with
    // `MOVED 140 …` after a Cluster failover (issue #29).
    clusterRetryStrategy: retryStrategy ?? ((attempt) => Math.min(attempt * 100, 2_000)),
    // A failover takes the cluster's node timeout; commands meanwhile wait
    // this long between tries, within their own deadline.
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    slotsRefreshTimeout: 2_000,
    ...(shardedSubscribers ? { shardedSubscribers: true } : {}),
  }
}

/**
 * Another connection to the same deployment with other options (a blocking
 * reader, a subscriber), closed by the caller. It does not auto-pipeline
 * unless told to (ioredis would copy the option): an XREAD BLOCK or a
 * subscription must not share a write, or a wait, with other commands.
 */
export function duplicateClient(redis: RedisClient, options: ClientOptions = {}): RedisClient {
  const { shardedSubscribers, enableAutoPipelining = false, ...rest } = options
  if (!isCluster(redis)) {
    const copy = failUnfulfilledOnDrop(redis.duplicate({ ...rest, enableAutoPipelining }))
    return reconnectsUnlessClosed(redis) ? reconnectUnlessClosed(copy) : copy
  }
  const base = redis.options
  const { retryStrategy, enableOfflineQueue, ...perNode } = rest
  return redis.duplicate([], {
    redisOptions: { ...base.redisOptions, ...perNode },
    enableAutoPipelining: false,
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(retryStrategy ? { clusterRetryStrategy: retryStrategy } : {}),
    ...(shardedSubscribers ? { shardedSubscribers: true } : {}),
  })
}

/** The connections of a client to each primary (one, but on a Cluster). */
export function primariesOf(redis: RedisClient): Redis[] {
  return isCluster(redis) ? redis.nodes('master') : [redis]
}
