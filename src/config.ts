// The one place the environment is read: checked once at startup against the
// schema of config-schema.ts, so a bad value stops the process with a
// one-line message naming the variable, then turned into a Config.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import {
  ENV_NAMES,
  type EnvName,
  EnvSchema,
  type LogLevel,
  type ModelProviderName,
  parseHostPort,
  type Variant,
  variableSchema,
} from './config-schema.ts'
import type { JwksSettings } from './http/identity/jwks.ts'
import {
  type McpServerConfig,
  McpServersConfigError,
  readMcpServers,
} from './mcp-servers-config.ts'
import { type ModelConfig, ModelsConfigError, readModels } from './models-config.ts'
import type { HostPort, RedisAccess, RedisDeployment } from './storage/redis-connections.ts'

export {
  LOG_LEVELS,
  type LogLevel,
  MODEL_PROVIDERS,
  type ModelProviderName,
  VARIANTS,
  type Variant,
} from './config-schema.ts'
export type { McpServerConfig } from './mcp-servers-config.ts'
export type { ModelConfig } from './models-config.ts'

export interface RateLimitConfig {
  /** Sends one user may make per window; 0 = no limit. */
  sends: number
  /** Requests of any kind one user may make per window; 0 = no limit. */
  requests: number
  windowSeconds: number
}

/** The limits past which a new send is shed as overloaded (MAX_OPEN_REQUESTS, MAX_RUNNING_TURNS, OVERLOAD_LAG_MS). */
export interface AdmissionConfig {
  maxOpenRequests: number
  maxRunningTurns: number
  /** 0: lag is not checked. */
  overloadLagMs: number
}

export interface Config {
  port: number
  host: string
  variant: Variant
  /** `postgres://…`, `memory://`, or undefined for embedded PGlite in `dataDir`. */
  databaseUrl: string | undefined
  dataDir: string
  /** REDIS_URL as given: `redis://…`, `memory://` or undefined. */
  redisUrl: string | undefined
  /**
   * The state's redis:// URL when it is on one server (REDIS_STATE_URL, else
   * REDIS_URL); undefined otherwise.
   */
  redisStateUrl: string | undefined
  /** The cache's Redis (one server, Sentinel or Cluster), or undefined for the in-process cache. */
  cacheRedis: RedisDeployment | undefined
  /**
   * Where turn state lives (logs, leases, stop requests, counters, rate
   * limits): REDIS_STATE_URL, else the cache's Redis (told apart by prefix),
   * or undefined for in-process state.
   */
  stateRedis: RedisDeployment | undefined
  /** Role prefix of the cache's keys: `DELETE /cache` removes those and nothing else. */
  redisCachePrefix: string
  /** Role prefix of the state's keys and channels. */
  redisStatePrefix: string
  modelProvider: ModelProviderName
  model: string
  openaiBaseUrl: string
  openaiApiKey: string | undefined
  /**
   * The model catalogue (CONTRACT §15): MODELS / MODELS_FILE, else the one
   * model of the variables above. Never empty; exactly one is the default.
   */
  models: ModelConfig[]
  /** TITLE_MODEL: the catalogue model that writes titles; undefined: the reply's model. */
  titleModel: string | undefined
  /** Longest wait for the next chunk from the model before the turn fails. */
  modelTimeoutMs: number
  localModelChunkDelayMs: number
  authJwtSecret: string | undefined
  /** An identity provider's tokens (AUTH_JWKS_URL, AUTH_ISSUER, AUTH_AUDIENCE, AUTH_USER_CLAIM). */
  authJwks: JwksSettings | undefined
  /**
   * Origins browsers may call from (CORS): `['*']` any, `[]` none, else exact
   * origins such as `https://chat.example.com`.
   */
  corsOrigins: string[]
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
  /**
   * Admission control (http/admission.ts): past any of these a new send is
   * shed with 503 `overloaded` before it costs anything. Requests open on
   * this server (streams included), turns running or being accepted, and the
   * event-loop lag in ms (0: not checked).
   */
  admission: AdmissionConfig
  /** Lease on a conversation's turns; a dead instance's turns are taken over after about this. */
  turnLeaseMs: number
  /** How long a finished turn's stream stays resumable. */
  resumeRetentionMs: number
  /** Longest time SIGTERM waits for running turns. */
  shutdownGraceMs: number
  /** After SIGTERM, how long /ready answers 503 while everything is still served (part of the grace). */
  shutdownDrainMs: number
  /** How long a running turn, then its readers, wait for a store that failed mid-turn (CONTRACT §19). */
  storeRecoveryMs: number
  /** Silence after which a stream gets a `: ping` comment. */
  sseKeepaliveMs: number
  logLevel: LogLevel
  rateLimit: RateLimitConfig
  /** Longest one cache command may take before the cache is treated as down (and bypassed). */
  cacheTimeoutMs: number
  /** Longest a database connect or statement may take before the request is a 503. */
  databaseTimeoutMs: number
  /**
   * Bytes of process memory the near cache of history and list keys may take
   * (0 = no near cache).
   */
  nearCacheMaxBytes: number
  /** Largest conversation import (a conversations.json, or a zip and the file inside it). */
  importMaxBytes: number
  /** Tools (CONTRACT §21): MCP servers, and the limits of a turn's tool calls. */
  tools: {
    mcpServers: McpServerConfig[]
    /** Longest one call (and one MCP connect) may take. */
    timeoutMs: number
    /** A result longer than this is cut. */
    maxOutputChars: number
    /** Model rounds with tool calls one turn may make. */
    maxSteps: number
  }
  /** Longest a request body may take to arrive in full before the request is a 408. */
  bodyTimeoutMs: number
  files: FilesConfig
}

/** Where attachments live and how large they may be (CONTRACT §20). */
export interface FilesConfig {
  /** FILES_DIR, default <DATA_DIR>/files: the folder store, when there is no S3 store. */
  dir: string
  /** The S3-compatible store of S3_BUCKET and the other S3_* variables, if set. */
  s3?: {
    bucket: string
    endpoint?: string
    region?: string
    accessKeyId?: string
    secretAccessKey?: string
  }
  maxBytes: number
  maxBytesPerUser: number
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>
type CheckedEnv = Static<typeof EnvSchema>

/**
 * The variables as the schema types them. Only a plain run of digits becomes a
 * number: the schema then refuses `3.5`, `1e3` or `0x10` instead of reading
 * them as 3, 1 or 16. An empty value counts as unset.
 */
function typedValues(env: Env): Record<string, unknown> {
  const values: Record<string, unknown> = {}
  for (const name of ENV_NAMES) {
    const raw = env[name]
    if (raw === undefined || raw === '') continue
    values[name] = variableSchema(name).type === 'integer' && /^\d+$/.test(raw) ? Number(raw) : raw
  }
  return values
}

/** Checks env against the schema; throws a ConfigError about the first bad variable. */
function checkEnv(env: Env): CheckedEnv {
  const values = Value.Default(EnvSchema, typedValues(env))
  const error = Value.Errors(EnvSchema, values).First()
  if (error === undefined) return values as CheckedEnv
  const name = error.path.split('/')[1] as EnvName
  const schema = variableSchema(name)
  const given = schema.sensitive ? '' : `; got "${env[name]}"`
  throw new ConfigError(`${name} must be ${schema.expected}${given}`)
}

/** The `host:port` entries of a list the schema checked. */
function hostPorts(list: string): HostPort[] {
  return list.split(',').flatMap((entry) => parseHostPort(entry) ?? [])
}

/**
 * REDIS_URL, REDIS_SENTINELS (with REDIS_SENTINEL_NAME) or
 * REDIS_CLUSTER_NODES: at most one of them; undefined = the in-process cache.
 */
function cacheRedis(env: CheckedEnv): RedisDeployment | undefined {
  const url = env.REDIS_URL?.startsWith('redis') ? env.REDIS_URL : undefined
  const given = [url && 'REDIS_URL', env.REDIS_SENTINELS && 'REDIS_SENTINELS']
  if (env.REDIS_CLUSTER_NODES) given.push('REDIS_CLUSTER_NODES')
  const set = given.filter((name) => typeof name === 'string')
  if (set.length > 1)
    throw new ConfigError(
      `${set.join(' and ')} are alternatives: set one of them (Redis is one deployment)`,
    )
  if (env.REDIS_SENTINELS && !env.REDIS_SENTINEL_NAME)
    throw new ConfigError(
      "REDIS_SENTINEL_NAME must be set with REDIS_SENTINELS (the primary's name in Sentinel)",
    )
  if (env.REDIS_SENTINEL_NAME && !env.REDIS_SENTINELS)
    throw new ConfigError('REDIS_SENTINELS must be set with REDIS_SENTINEL_NAME')
  const access = redisAccess(env, set[0])
  if (env.REDIS_CLUSTER_NODES)
    return { kind: 'cluster', nodes: hostPorts(env.REDIS_CLUSTER_NODES), ...access }
  if (env.REDIS_SENTINELS && env.REDIS_SENTINEL_NAME)
    return {
      kind: 'sentinel',
      sentinels: hostPorts(env.REDIS_SENTINELS),
      name: env.REDIS_SENTINEL_NAME,
      ...access,
    }
  return url ? { kind: 'server', url } : undefined
}

/**
 * REDIS_USERNAME, REDIS_PASSWORD, REDIS_TLS (with REDIS_TLS_CA_FILE) and
 * REDIS_SENTINEL_PASSWORD: how Sentinel's primary or the Cluster's nodes are
 * reached. Refused with anything else, where they would be ignored: a
 * REDIS_URL carries its own credentials (and rediss:// for TLS).
 */
function redisAccess(env: CheckedEnv, deployment: string | undefined): { access?: RedisAccess } {
  const tls = env.REDIS_TLS === 'true'
  const given = [
    env.REDIS_USERNAME !== undefined && 'REDIS_USERNAME',
    env.REDIS_PASSWORD !== undefined && 'REDIS_PASSWORD',
    tls && 'REDIS_TLS',
    env.REDIS_TLS_CA_FILE !== undefined && 'REDIS_TLS_CA_FILE',
    env.REDIS_SENTINEL_PASSWORD !== undefined && 'REDIS_SENTINEL_PASSWORD',
  ].filter((name) => typeof name === 'string')
  if (given.length === 0) return {}
  if (deployment !== 'REDIS_SENTINELS' && deployment !== 'REDIS_CLUSTER_NODES')
    throw new ConfigError(
      `${given[0]} is for REDIS_SENTINELS or REDIS_CLUSTER_NODES; a REDIS_URL carries its own (redis://user:password@host:port, rediss:// for TLS)`,
    )
  if (env.REDIS_SENTINEL_PASSWORD !== undefined && deployment !== 'REDIS_SENTINELS')
    throw new ConfigError('REDIS_SENTINEL_PASSWORD is only for REDIS_SENTINELS')
  if (env.REDIS_TLS_CA_FILE !== undefined && !tls)
    throw new ConfigError('REDIS_TLS_CA_FILE needs REDIS_TLS=true')
  return {
    access: {
      ...(env.REDIS_USERNAME === undefined ? {} : { username: env.REDIS_USERNAME }),
      ...(env.REDIS_PASSWORD === undefined ? {} : { password: env.REDIS_PASSWORD }),
      ...(env.REDIS_SENTINEL_PASSWORD === undefined
        ? {}
        : { sentinelPassword: env.REDIS_SENTINEL_PASSWORD }),
      ...(tls
        ? { tls: env.REDIS_TLS_CA_FILE === undefined ? {} : { ca: pemFile(env.REDIS_TLS_CA_FILE) } }
        : {}),
    },
  }
}

/** A PEM file's text, read at startup; ConfigError naming the file when it is not one. */
function pemFile(path: string): string {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    throw new ConfigError(`REDIS_TLS_CA_FILE must name a readable file; cannot read "${path}"`)
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----'))
    throw new ConfigError(`REDIS_TLS_CA_FILE must be a PEM certificate; "${path}" holds none`)
  return text
}

/**
 * REDIS_STATE_URL, else the cache's Redis: the state's keys have a prefix of
 * their own, which a cache flush never reaches. memory:// or no Redis at all:
 * in process (undefined).
 */
function stateRedis(env: CheckedEnv, cache: RedisDeployment | undefined) {
  const explicit = env.REDIS_STATE_URL
  if (explicit?.startsWith('memory:')) return undefined
  return explicit ? ({ kind: 'server', url: explicit } as const) : cache
}

/** The two role prefixes, refused when a cache flush (SCAN <cache prefix>*) could reach a state key. */
function rolePrefixes(env: CheckedEnv) {
  const cache = env.REDIS_CACHE_PREFIX
  const state = env.REDIS_STATE_PREFIX
  if (cache.startsWith(state) || state.startsWith(cache))
    throw new ConfigError(
      `REDIS_STATE_PREFIX must not start with REDIS_CACHE_PREFIX or the other way round (got "${state}" and "${cache}"): flushing the cache would erase running turns`,
    )
  return { redisCachePrefix: cache, redisStatePrefix: state }
}

/**
 * AUTH_JWKS_URL with AUTH_ISSUER and AUTH_AUDIENCE, all three or none: a
 * provider's token is only as good as the issuer and audience it is checked
 * for, and either alone would be ignored.
 */
function authJwks(env: CheckedEnv): JwksSettings | undefined {
  const { AUTH_JWKS_URL: url, AUTH_ISSUER: issuer, AUTH_AUDIENCE: audience } = env
  if (url === undefined) {
    const stray = [
      issuer !== undefined && 'AUTH_ISSUER',
      audience !== undefined && 'AUTH_AUDIENCE',
      env.AUTH_USER_CLAIM !== 'sub' && 'AUTH_USER_CLAIM',
    ].find((name) => typeof name === 'string')
    if (stray) throw new ConfigError(`${stray} needs AUTH_JWKS_URL (the provider's key set)`)
    return undefined
  }
  if (issuer === undefined || audience === undefined)
    throw new ConfigError(
      `${issuer === undefined ? 'AUTH_ISSUER' : 'AUTH_AUDIENCE'} must be set with AUTH_JWKS_URL (tokens are checked for their issuer and audience)`,
    )
  return { url, issuer, audience, userClaim: env.AUTH_USER_CLAIM }
}

/**
 * CORS_ORIGINS: comma-separated origins (`scheme://host[:port]`) or `*`.
 * Unset: any origin in development mode, none when tokens are required
 * (AUTH_JWT_SECRET or AUTH_JWKS_URL).
 */
function corsOrigins(env: CheckedEnv): string[] {
  const raw = env.CORS_ORIGINS
  if (raw === undefined)
    return env.AUTH_JWT_SECRET !== undefined || env.AUTH_JWKS_URL !== undefined ? [] : ['*']
  const origins = raw
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin !== '')
  if (origins.includes('*')) {
    if (origins.length > 1) throw new ConfigError('CORS_ORIGINS is either * or a list of origins')
    return origins
  }
  for (const origin of origins) {
    let parsed: URL | undefined
    try {
      parsed = new URL(origin)
    } catch {}
    if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin)
      throw new ConfigError(
        `CORS_ORIGINS must list origins like https://app.example.com (no path), got "${origin}"`,
      )
  }
  return origins
}

/** The catalogue of MODELS / MODELS_FILE, or of the single-model variables; ConfigError on a bad entry. */
function models(env: Env, single: Parameters<typeof readModels>[1]): ModelConfig[] {
  try {
    return readModels(env, single)
  } catch (error) {
    if (error instanceof ModelsConfigError) throw new ConfigError(error.message)
    throw error
  }
}

/** TITLE_MODEL: a slug of the catalogue (CONTRACT §23); ConfigError naming the slugs there are otherwise. */
function titleModel(
  slug: string | undefined,
  catalogue: readonly ModelConfig[],
): string | undefined {
  if (slug === undefined || catalogue.some((entry) => entry.slug === slug)) return slug
  const slugs = catalogue.map((entry) => `"${entry.slug}"`).join(', ')
  throw new ConfigError(
    `TITLE_MODEL must be the slug of a model in the catalogue (${slugs}), got "${slug}"`,
  )
}

/** The servers of MCP_SERVERS / MCP_SERVERS_FILE; ConfigError on a bad entry. */
function mcpServers(env: Env): McpServerConfig[] {
  try {
    return readMcpServers(env)
  } catch (error) {
    if (error instanceof McpServersConfigError) throw new ConfigError(error.message)
    throw error
  }
}

/** Where the cache and the state live in Redis, and under which prefixes. */
function redisConfig(e: CheckedEnv) {
  const cache = cacheRedis(e)
  const state = stateRedis(e, cache)
  return {
    cacheRedis: cache,
    stateRedis: state,
    redisStateUrl: state?.kind === 'server' ? state.url : undefined,
    ...rolePrefixes(e),
  }
}

/** The attachments' store and limits; the S3_* variables other than S3_BUCKET need it. */
function filesConfig(e: CheckedEnv, dataDir: string): FilesConfig {
  const others = [
    e.S3_ENDPOINT && 'S3_ENDPOINT',
    e.S3_REGION && 'S3_REGION',
    e.S3_ACCESS_KEY_ID && 'S3_ACCESS_KEY_ID',
    e.S3_SECRET_ACCESS_KEY && 'S3_SECRET_ACCESS_KEY',
  ].filter((name) => typeof name === 'string')
  if (!e.S3_BUCKET && others.length > 0)
    throw new ConfigError(`S3_BUCKET must be set with ${others[0]} (the bucket files go to)`)
  if ((e.S3_ACCESS_KEY_ID === undefined) !== (e.S3_SECRET_ACCESS_KEY === undefined))
    throw new ConfigError(
      'S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY are set together or not at all',
    )
  return {
    dir: e.FILES_DIR ?? join(dataDir, 'files'),
    ...(e.S3_BUCKET
      ? {
          s3: {
            bucket: e.S3_BUCKET,
            endpoint: e.S3_ENDPOINT,
            region: e.S3_REGION,
            accessKeyId: e.S3_ACCESS_KEY_ID,
            secretAccessKey: e.S3_SECRET_ACCESS_KEY,
          },
        }
      : {}),
    maxBytes: e.FILE_MAX_BYTES,
    maxBytesPerUser: e.FILES_MAX_BYTES_PER_USER,
  }
}

/** Parses the environment into a Config; throws ConfigError naming the bad variable. */
export function loadConfig(env: Env = process.env): Config {
  const e = checkEnv(env)
  const model = e.MODEL ?? (e.MODEL_PROVIDER === 'local' ? 'local-echo' : 'gpt-4o-mini')
  const openaiBaseUrl = e.OPENAI_BASE_URL?.replace(/\/+$/, '') ?? 'https://api.openai.com/v1'
  const catalogue = models(env, {
    provider: e.MODEL_PROVIDER,
    model,
    openaiBaseUrl,
    openaiApiKey: e.OPENAI_API_KEY,
  })
  return {
    port: e.PORT,
    host: e.HOST,
    variant: e.APP_VARIANT,
    databaseUrl: e.DATABASE_URL,
    dataDir: e.DATA_DIR ?? './.data',
    redisUrl: e.REDIS_URL,
    ...redisConfig(e),
    modelProvider: e.MODEL_PROVIDER,
    model,
    openaiBaseUrl,
    openaiApiKey: e.OPENAI_API_KEY,
    models: catalogue,
    titleModel: titleModel(e.TITLE_MODEL, catalogue),
    modelTimeoutMs: e.MODEL_TIMEOUT_MS,
    localModelChunkDelayMs: e.LOCAL_MODEL_CHUNK_DELAY_MS,
    authJwtSecret: e.AUTH_JWT_SECRET,
    authJwks: authJwks(e),
    corsOrigins: corsOrigins(e),
    resumeTokenSecret: e.RESUME_TOKEN_SECRET,
    adminToken: e.ADMIN_TOKEN,
    appEnv: e.APP_ENV,
    debug: e.DEBUG,
    hotReload: e.HOT_RELOAD,
    debugToolbar: e.DEBUG_TOOLBAR,
    maxRunningConversations: e.MAX_RUNNING_CONVERSATIONS,
    admission: {
      maxOpenRequests: e.MAX_OPEN_REQUESTS,
      maxRunningTurns: e.MAX_RUNNING_TURNS,
      overloadLagMs: e.OVERLOAD_LAG_MS,
    },
    turnLeaseMs: e.TURN_LEASE_MS,
    resumeRetentionMs: e.RESUME_RETENTION_MS,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    shutdownDrainMs: e.SHUTDOWN_DRAIN_MS,
    storeRecoveryMs: e.STORE_RECOVERY_MS,
    sseKeepaliveMs: e.SSE_KEEPALIVE_MS,
    logLevel: e.LOG_LEVEL,
    rateLimit: {
      sends: e.RATE_LIMIT_SENDS,
      requests: e.RATE_LIMIT_REQUESTS,
      windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS,
    },
    cacheTimeoutMs: e.CACHE_TIMEOUT_MS,
    databaseTimeoutMs: e.DATABASE_TIMEOUT_MS,
    nearCacheMaxBytes: e.NEAR_CACHE_MAX_BYTES,
    importMaxBytes: e.IMPORT_MAX_BYTES,
    bodyTimeoutMs: e.BODY_TIMEOUT_MS,
    files: filesConfig(e, e.DATA_DIR ?? './.data'),
    tools: {
      mcpServers: mcpServers(env),
      timeoutMs: e.TOOL_TIMEOUT_MS,
      maxOutputChars: e.TOOL_OUTPUT_MAX_CHARS,
      maxSteps: e.TOOL_MAX_STEPS,
    },
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
