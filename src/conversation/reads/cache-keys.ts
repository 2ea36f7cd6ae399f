// The conversation API's cache keys (named in storage/keyspace.ts, hash-tagged
// by conversation or user) and expiries (CONTRACT §4.5-§4.7).
export { contextKey, historyKey, listKey } from '../../storage/keyspace.ts'

export const HISTORY_TTL_SECONDS = 600
export const LIST_TTL_SECONDS = 600
export const CONTEXT_TTL_SECONDS = 86_400
export const CONTEXT_LENGTH = 20

/** Key prefixes of the near-cached keys (reads answered from process memory, see near-cache.ts). */
export const NEAR_CACHED_PREFIXES = ['conv:', 'user:'] as const
/** The history and list keys: read on every page view, changed only by writes the service makes. */
export const isNearCached = (key: string) =>
  (key.startsWith('conv:') && key.endsWith(':history')) ||
  (key.startsWith('user:') && key.endsWith(':conversation_list'))
