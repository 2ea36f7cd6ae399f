// Every Redis key and channel name of the service, in one place (CONTRACT §18).
//
// A name is <role prefix><name>. The role prefix tells the cache from the
// state (REDIS_CACHE_PREFIX `conduit:c:`, REDIS_STATE_PREFIX `conduit:s:`),
// not a database number: both may share one database (Redis Cluster and most
// managed services have database 0 only), and `DELETE /cache` removes the
// keys under the cache prefix and nothing else. Every key of one
// conversation, turn or user carries that id as a hash tag `{id}`: Redis
// Cluster hashes only the tag, so the keys one script or transaction touches
// share a slot.
//
// Cache keys, as the service names them (the cache adapter adds the prefix):
//   conv:{<conversation>}:history, user:{<user>}:conversation_list,
//   chat:{<conversation>}:context; a key without a tag (documents:list,
//   counter:visits) is stored as {<key>}, so its fill marker shares its slot.
// State keys, under the state prefix:
//   turnlog:{t<n>}:<message>, …:meta  a turn's log (redis-turn-log-scripts.ts),
//     in one of 256 buckets by its message id (the id the port addresses it by)
//   turnlog:unfinished  logs not finished yet; on a Cluster one set per bucket,
//     turnlog:unfinished:{t<n>}, so a bucket's logs and their set share a slot:
//     a batch of writes is one script call per bucket, a sweep reads 256 sets
//   lease:{<conversation>}, :wanted, :fence  the conversation's lease
//   stop:{<conversation>}  the durable stop flag of the turn to stop
//   secret:<name>  secrets every instance shares
//   ratelimit:<limit>:{<user>}  a user's count (rate-limiter-flexible adds the `:`)
// Channels: <state prefix>stop (one for every stop), or on Cluster
// (sharded pub/sub) <state prefix>stop:{<conversation>}.

import { bucketOf } from './redis-slots.ts'

export const DEFAULT_CACHE_PREFIX = 'conduit:c:'
export const DEFAULT_STATE_PREFIX = 'conduit:s:'

/** `{id}`: the part of a key Redis Cluster hashes. */
export const hashTag = (id: string) => `{${id}}`

/** Whether Redis Cluster would hash only part of `key` (it holds a non-empty `{…}`). */
export function hasHashTag(key: string): boolean {
  const open = key.indexOf('{')
  if (open === -1) return false
  const close = key.indexOf('}', open + 1)
  return close > open + 1
}

/**
 * A configurable role prefix: it cannot change a key's hash tag (no braces)
 * and has no spaces. (The adapters also take an empty one, for tests that own a database.)
 */
export const isRolePrefix = (prefix: string) => /^[^{}\s]{1,64}$/.test(prefix)

// The conversation API's cache keys (CONTRACT §4.5-§4.7).
export const historyKey = (conversationId: string) => `conv:${hashTag(conversationId)}:history`
export const listKey = (userId: string) => `user:${hashTag(userId)}:conversation_list`
export const contextKey = (conversationId: string) => `chat:${hashTag(conversationId)}:context`

/** The Redis name of a cache key: a key without a hash tag becomes one, `{key}`. */
export function cacheRedisKey(prefix: string, key: string): string {
  return hasHashTag(key) ? prefix + key : `${prefix}{${key}}`
}

/** The cache key of a Redis name under `prefix` (cacheRedisKey undone); undefined for other keys. */
export function cacheKeyOf(prefix: string, redisKey: string): string | undefined {
  if (!redisKey.startsWith(prefix)) return undefined
  const key = redisKey.slice(prefix.length)
  if (key.startsWith('{') && key.endsWith('}') && key.indexOf('}') === key.length - 1) {
    const inner = key.slice(1, -1)
    if (!hasHashTag(inner)) return inner
  }
  return key
}

/** A SCAN MATCH pattern for every key under `prefix`. */
export const prefixPattern = (prefix: string) => `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`

/** How many buckets turn logs are spread over (hash tags `{t0}` … `{t255}`). */
export const TURN_LOG_BUCKETS = 256

/** The hash tag of a turn log's bucket. */
export const turnLogBucket = (messageId: string) => `t${bucketOf(messageId, TURN_LOG_BUCKETS)}`

/** Every bucket's hash tag. */
export const turnLogBuckets = () => Array.from({ length: TURN_LOG_BUCKETS }, (_, n) => `t${n}`)

/** The two keys of a turn's log; `prefix` is the state prefix plus `turnlog:`. */
export function turnLogKeys(prefix: string, messageId: string) {
  const stream = `${prefix}${hashTag(turnLogBucket(messageId))}:${messageId}`
  return { stream, meta: `${stream}:meta` }
}

/** The set of unfinished logs, or on a Cluster the one of a bucket (turnLogBucket). */
export const unfinishedKey = (prefix: string, bucket?: string) =>
  bucket === undefined ? `${prefix}unfinished` : `${prefix}unfinished:${hashTag(bucket)}`

/** The keys of a conversation's lease. */
export function leaseKeys(prefix: string, conversationId: string) {
  const lease = `${prefix}lease:${hashTag(conversationId)}`
  return { lease, wanted: `${lease}:wanted`, fence: `${lease}:fence` }
}

/** The durable flag naming the turn of a conversation to stop. */
export const stopFlagKey = (prefix: string, conversationId: string) =>
  `${prefix}stop:${hashTag(conversationId)}`

/** The channel every stop goes on (one server, Sentinel). */
export const stopChannel = (prefix: string) => `${prefix}stop`

/** The sharded channel of one conversation's stops (Cluster): in the slot of its keys. */
export const conversationStopChannel = (prefix: string, conversationId: string) =>
  `${prefix}stop:${hashTag(conversationId)}`

export const secretKey = (prefix: string, name: string) => `${prefix}secret:${name}`

/** rate-limiter-flexible's key prefix of one limit; it appends `:<key>`. */
export const rateLimitPrefix = (prefix: string, limit: string) => `${prefix}ratelimit:${limit}`

/** The key a user's count goes under in a rate limiter: their id as the hash tag. */
export const rateLimitKey = (userId: string) => hashTag(userId)
