// Which storage the benchmarked server runs on: the real Postgres and Redis of
// DATABASE_URL / REDIS_URL when set, the embedded ones otherwise. The harness
// only ever talks to this machine, so the URLs must point at loopback.

export interface Backend {
  /** Short label for reports and file names, e.g. `postgres-redis`. */
  label: string
  /** The server's DATABASE_URL: the real one, or `memory://` (embedded, not persisted). */
  databaseUrl: string
  /** The server's REDIS_URL, or undefined for the in-process cache. */
  redisUrl: string | undefined
  /**
   * Where the servers keep turn logs and leases: REDIS_STATE_URL, else (as the
   * service does) REDIS_URL's next database; undefined for in-process state.
   */
  stateUrl: string | undefined
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]', '::1'])

/** Throws unless `raw` names a host on this machine. */
export function assertLoopback(name: string, raw: string): void {
  const host = new URL(raw).hostname
  if (!LOOPBACK_HOSTS.has(host))
    throw new Error(`${name} must point at loopback (127.0.0.1), got host "${host}"`)
}

/** REDIS_URL with its database number one up (`redis://h:p/12` → `/13`, none → `/1`). */
function nextDatabase(redisUrl: string): string {
  const url = new URL(redisUrl)
  const path = url.pathname.replace(/^\//, '')
  url.pathname = `/${(path === '' ? 0 : Number(path)) + 1}`
  return url.toString()
}

export function backendFromEnv(env: Record<string, string | undefined>): Backend {
  const databaseUrl = env.DATABASE_URL || undefined
  const redisUrl = env.REDIS_URL || undefined
  const explicitState = env.REDIS_STATE_URL || undefined
  if (databaseUrl?.startsWith('postgres')) assertLoopback('DATABASE_URL', databaseUrl)
  if (redisUrl?.startsWith('redis')) assertLoopback('REDIS_URL', redisUrl)
  if (explicitState?.startsWith('redis')) assertLoopback('REDIS_STATE_URL', explicitState)
  const realDb = databaseUrl?.startsWith('postgres') === true
  const realCache = redisUrl?.startsWith('redis') === true
  const stateUrl = explicitState?.startsWith('redis')
    ? explicitState
    : explicitState === undefined && realCache && redisUrl
      ? nextDatabase(redisUrl)
      : undefined
  return {
    // `-local-state`: the cache in Redis, turn logs and leases in process.
    label: `${realDb ? 'postgres' : 'embedded'}-${realCache ? 'redis' : 'memory'}${realCache && !stateUrl ? '-local-state' : ''}`,
    databaseUrl: realDb && databaseUrl ? databaseUrl : 'memory://',
    redisUrl: realCache ? redisUrl : undefined,
    stateUrl,
  }
}
