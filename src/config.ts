// The one place the environment is read: parsed and validated once at startup,
// so a bad value stops the process with a message naming the variable.
export const VARIANTS = [
  'full',
  'basic',
  'counter',
  'configuration',
  'instance',
  'dependency-check',
] as const
export type Variant = (typeof VARIANTS)[number]

export const MODEL_PROVIDERS = ['local', 'openai'] as const
export type ModelProviderName = (typeof MODEL_PROVIDERS)[number]

export interface Config {
  port: number
  host: string
  variant: Variant
  /** `postgres://…`, `memory://`, or undefined for embedded PGlite in `dataDir`. */
  databaseUrl: string | undefined
  dataDir: string
  /** `redis://…`, or undefined for the in-process cache. */
  redisUrl: string | undefined
  /**
   * Where turn state lives (logs, leases, stop requests, counters): `redis://…`,
   * or undefined for in-process state. Defaults to REDIS_URL's server, one
   * database number up, so flushing the cache never reaches it.
   */
  redisStateUrl: string | undefined
  modelProvider: ModelProviderName
  model: string
  openaiBaseUrl: string
  openaiApiKey: string | undefined
  /** Longest wait for the next chunk from the model before the turn fails. */
  modelTimeoutMs: number
  localModelChunkDelayMs: number
  authJwtSecret: string | undefined
  /** Unset: shared by every instance through the state store (random per process in memory). */
  resumeTokenSecret: string | undefined
  adminToken: string | undefined
  /** Raw `APP_ENV`; each variant applies its own default. */
  appEnv: string | undefined
  debug: string | undefined
  hotReload: string | undefined
  debugToolbar: string | undefined
  /** Most conversations one process runs turns for at once; past it sends get 429. */
  maxRunningConversations: number
  /** Lease on a conversation's turns; a dead instance's turns are taken over after about this. */
  turnLeaseMs: number
  /** How long a finished turn's stream stays resumable. */
  resumeRetentionMs: number
  /** Longest time SIGTERM waits for running turns. */
  shutdownGraceMs: number
  /** Silence after which a stream gets a `: ping` comment. */
  sseKeepaliveMs: number
  /**
   * Bytes of process memory the near cache of history and list keys may take
   * (with a real Redis); 0 turns it off.
   */
  nearCacheMaxBytes: number
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>

function text(env: Env, name: string): string | undefined {
  const value = env[name]
  return value === undefined || value === '' ? undefined : value
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`)
  const value = Number(raw)
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`)
  return value
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = text(env, name) ?? fallback
  if (!(values as readonly string[]).includes(raw))
    throw new ConfigError(`${name} must be one of ${values.join(', ')}; got "${raw}"`)
  return raw as T
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = text(env, name)
  if (raw === undefined) return undefined
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(`${name} is not a valid URL`)
  }
  if (!protocols.includes(parsed.protocol))
    throw new ConfigError(`${name} must start with ${protocols.map((p) => `${p}//`).join(' or ')}`)
  return raw
}

/** The cache database's number in a redis:// URL (its path, default 0). */
function databaseOf(parsed: URL): number {
  const path = parsed.pathname.replace(/^\//, '')
  return path === '' ? 0 : Number(path)
}

/**
 * REDIS_STATE_URL, else REDIS_URL's server one database up; never the cache
 * database itself, which `DELETE /cache` flushes. Undefined = in-process state.
 */
function stateUrl(env: Env): string | undefined {
  const cache = url(env, 'REDIS_URL', ['redis:', 'rediss:', 'memory:'])
  const explicit = url(env, 'REDIS_STATE_URL', ['redis:', 'rediss:', 'memory:'])
  if (explicit?.startsWith('memory:')) return undefined
  const cacheUrl = cache?.startsWith('redis') ? new URL(cache) : undefined
  if (explicit === undefined) {
    if (!cacheUrl) return undefined
    const database = databaseOf(cacheUrl)
    if (!Number.isInteger(database) || database < 0)
      throw new ConfigError('REDIS_URL names no valid database number')
    cacheUrl.pathname = `/${database + 1}`
    return cacheUrl.toString()
  }
  const state = new URL(explicit)
  if (cacheUrl && state.host === cacheUrl.host && databaseOf(state) === databaseOf(cacheUrl))
    throw new ConfigError(
      'REDIS_STATE_URL must not be the cache database of REDIS_URL: flushing the cache would erase running turns',
    )
  return explicit
}

/** Parses the environment into a Config; throws ConfigError naming the bad variable. */
export function loadConfig(env: Env = process.env): Config {
  const modelProvider = oneOf(env, 'MODEL_PROVIDER', MODEL_PROVIDERS, 'local')
  return {
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: text(env, 'HOST') ?? '0.0.0.0',
    variant: oneOf(env, 'APP_VARIANT', VARIANTS, 'full'),
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:', 'memory:']),
    dataDir: text(env, 'DATA_DIR') ?? './.data',
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:', 'memory:']),
    redisStateUrl: stateUrl(env),
    modelProvider,
    model: text(env, 'MODEL') ?? (modelProvider === 'local' ? 'local-echo' : 'gpt-4o-mini'),
    openaiBaseUrl:
      url(env, 'OPENAI_BASE_URL', ['http:', 'https:'])?.replace(/\/+$/, '') ??
      'https://api.openai.com/v1',
    openaiApiKey: text(env, 'OPENAI_API_KEY'),
    modelTimeoutMs: integer(env, 'MODEL_TIMEOUT_MS', 60_000, 1, 3_600_000),
    localModelChunkDelayMs: integer(env, 'LOCAL_MODEL_CHUNK_DELAY_MS', 20, 0, 60_000),
    authJwtSecret: text(env, 'AUTH_JWT_SECRET'),
    resumeTokenSecret: text(env, 'RESUME_TOKEN_SECRET'),
    adminToken: text(env, 'ADMIN_TOKEN'),
    appEnv: text(env, 'APP_ENV'),
    debug: text(env, 'DEBUG'),
    hotReload: text(env, 'HOT_RELOAD'),
    debugToolbar: text(env, 'DEBUG_TOOLBAR'),
    maxRunningConversations: integer(env, 'MAX_RUNNING_CONVERSATIONS', 10_000, 1, 10_000_000),
    turnLeaseMs: integer(env, 'TURN_LEASE_MS', 10_000, 100, 60_000),
    resumeRetentionMs: integer(env, 'RESUME_RETENTION_MS', 900_000, 600_000, 86_400_000),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 30_000, 0, 300_000),
    sseKeepaliveMs: integer(env, 'SSE_KEEPALIVE_MS', 15_000, 10, 300_000),
    nearCacheMaxBytes: integer(env, 'NEAR_CACHE_MAX_BYTES', 16 * 2 ** 20, 0, 2 ** 34),
  }
}

/** The database URL with any password replaced by `***`, safe to show. */
export function maskUrlPassword(raw: string): string {
  try {
    const parsed = new URL(raw)
    if (parsed.password === '') return raw
    parsed.password = '***'
    return parsed.toString()
  } catch {
    return raw.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@')
  }
}
