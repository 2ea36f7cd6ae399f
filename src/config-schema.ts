// The environment the service reads, as one TypeBox schema: every variable,
// its type, its range or allowed values, its default, and how to say what it
// must be. loadConfig (config.ts) checks the environment against it and turns
// the result into a Config. Adding a variable is one entry here and one line
// in config.ts.
import { isIP } from 'node:net'
import { FormatRegistry, type TLiteral, type TSchema, Type } from '@sinclair/typebox'
import { isRolePrefix } from './storage/keyspace.ts'

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

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/**
 * Keywords this schema adds to each variable: `expected` completes "NAME must
 * be …" in the error message, and `sensitive` keeps the given value out of it
 * (secrets, and URLs, which may carry a password).
 */
interface VariableOptions {
  expected: string
  sensitive?: boolean
}

const HOST_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/i

/**
 * An IP address, or a host name made of DNS labels. A name whose labels are
 * all digits is an IPv4 address or nothing: `999.1.1.1` is refused, not
 * looked up.
 */
export function isHost(value: string): boolean {
  if (isIP(value) !== 0) return true
  if (value.length > 253) return false
  const labels = value.replace(/\.$/, '').split('.')
  if (labels.every((label) => /^\d+$/.test(label))) return false
  return labels.every((label) => HOST_LABEL.test(label))
}

/** A URL that parses and has one of the schemes. */
function urlWithScheme(schemes: string[]) {
  return (value: string) => {
    try {
      return schemes.includes(new URL(value).protocol)
    } catch {
      return false
    }
  }
}

/** A redis:// URL whose path, if any, is a database number. */
const isRedisUrl = (value: string) =>
  urlWithScheme(['redis:', 'rediss:'])(value) && /^\/?\d*$/.test(new URL(value).pathname)

/** `host:port` (an IPv6 host in brackets), split; undefined when it is not one. */
export function parseHostPort(value: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([0-9a-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/i.exec(value.trim())
  const host = match?.[1] ?? match?.[2]
  const port = Number(match?.[3])
  if (!host || !isHost(host) || !Number.isInteger(port) || port < 1 || port > 65_535)
    return undefined
  return { host, port }
}

/** A comma-separated list of `host:port` (at most 64). */
const isHostPortList = (value: string) => {
  const entries = value.split(',')
  return entries.length <= 64 && entries.every((entry) => parseHostPort(entry) !== undefined)
}

FormatRegistry.Set('conduit-host', isHost)
FormatRegistry.Set('conduit-host-ports', isHostPortList)
FormatRegistry.Set('conduit-key-prefix', isRolePrefix)
FormatRegistry.Set('conduit-database-url', urlWithScheme(['postgres:', 'postgresql:', 'memory:']))
FormatRegistry.Set('conduit-redis-url', (value) => value === 'memory://' || isRedisUrl(value))
FormatRegistry.Set('conduit-http-url', urlWithScheme(['http:', 'https:']))
/** An HS256 key of at least 32 bytes (RFC 7518 §3.2: no shorter than the hash's 256 bits). */
export const MIN_JWT_SECRET_BYTES = 32
FormatRegistry.Set(
  'conduit-jwt-secret',
  (value) => Buffer.byteLength(value, 'utf8') >= MIN_JWT_SECRET_BYTES,
)
FormatRegistry.Set('conduit-s3-bucket', (value) => /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(value))

/** A whole number from min to max. */
const integer = (fallback: number, minimum: number, maximum: number) =>
  Type.Integer({
    default: fallback,
    minimum,
    maximum,
    expected: `a whole number from ${minimum} to ${maximum}`,
  } satisfies VariableOptions & Record<string, unknown>)

/** One of a list of words. */
const oneOf = <T extends string>(values: readonly T[], fallback?: T) =>
  Type.Union(
    values.map((value) => Type.Literal(value)) as TLiteral<T>[],
    fallback === undefined
      ? { expected: `one of ${values.join(', ')}` }
      : { default: fallback, expected: `one of ${values.join(', ')}` },
  )

/** Optional text (no default). */
const text = (options: Partial<VariableOptions> = {}) =>
  Type.Optional(Type.String({ minLength: 1, expected: 'a non-empty text', ...options }))

/** An optional URL (no default) of a format registered above. */
const url = (format: string, expected: string) =>
  Type.Optional(Type.String({ format, expected, sensitive: true }))

/** Largest attachment by default: 20 MiB (CONTRACT §20). */
export const DEFAULT_FILE_MAX_BYTES = 20 * 2 ** 20

/** Largest conversation import by default: 64 MiB. */
export const DEFAULT_IMPORT_MAX_BYTES = 64 * 2 ** 20

const variables = {
  PORT: integer(3000, 0, 65535),
  HOST: Type.String({
    default: '0.0.0.0',
    format: 'conduit-host',
    expected: 'an IP address or a host name',
  }),
  APP_VARIANT: oneOf(VARIANTS, 'full'),
  DATABASE_URL: url('conduit-database-url', 'a postgres://, postgresql:// or memory:// URL'),
  DATA_DIR: text({ expected: 'a directory' }),
  REDIS_URL: url(
    'conduit-redis-url',
    'a redis:// or rediss:// URL (with an optional database number) or memory://',
  ),
  REDIS_STATE_URL: url(
    'conduit-redis-url',
    'a redis:// or rediss:// URL (with an optional database number) or memory://',
  ),
  REDIS_CACHE_PREFIX: Type.String({
    default: 'conduit:c:',
    format: 'conduit-key-prefix',
    expected: 'a key prefix of 1 to 64 characters without braces or spaces',
  }),
  REDIS_STATE_PREFIX: Type.String({
    default: 'conduit:s:',
    format: 'conduit-key-prefix',
    expected: 'a key prefix of 1 to 64 characters without braces or spaces',
  }),
  REDIS_CLUSTER_NODES: Type.Optional(
    Type.String({ format: 'conduit-host-ports', expected: 'a comma-separated list of host:port' }),
  ),
  REDIS_SENTINELS: Type.Optional(
    Type.String({ format: 'conduit-host-ports', expected: 'a comma-separated list of host:port' }),
  ),
  REDIS_SENTINEL_NAME: text({ expected: 'the name Sentinel knows the primary by' }),
  // Credentials and TLS of a Sentinel-managed primary or a Cluster's nodes (a REDIS_URL carries its own).
  REDIS_USERNAME: text({ expected: 'a Redis ACL user name' }),
  REDIS_PASSWORD: text({ sensitive: true }),
  REDIS_SENTINEL_PASSWORD: text({ sensitive: true }),
  REDIS_TLS: oneOf(['true', 'false'] as const, 'false'),
  REDIS_TLS_CA_FILE: text({ expected: 'a PEM file' }),
  MODEL_PROVIDER: oneOf(MODEL_PROVIDERS, 'local'),
  MODEL: text(),
  OPENAI_BASE_URL: url('conduit-http-url', 'an http:// or https:// URL'),
  OPENAI_API_KEY: text({ sensitive: true }),
  // The model catalogue (models-config.ts checks each entry); never echoed: it may hold prompts.
  MODELS: text({ sensitive: true }),
  MODELS_FILE: text({ expected: 'a file name' }),
  // The catalogue model that writes titles (config.ts checks the slug is in the catalogue).
  TITLE_MODEL: text({ expected: 'the slug of a catalogue model' }),
  MODEL_TIMEOUT_MS: integer(60_000, 1, 3_600_000),
  LOCAL_MODEL_CHUNK_DELAY_MS: integer(20, 0, 60_000),
  // A short HMAC key can be guessed offline from any one token it signed.
  AUTH_JWT_SECRET: Type.Optional(
    Type.String({
      format: 'conduit-jwt-secret',
      expected: `at least ${MIN_JWT_SECRET_BYTES} bytes (for example: openssl rand -hex 32)`,
      sensitive: true,
    }),
  ),
  // An identity provider's tokens (CONTRACT §22); config.ts requires the three together.
  AUTH_JWKS_URL: url('conduit-http-url', 'an http:// or https:// URL'),
  AUTH_ISSUER: text({ expected: "the provider's issuer (the tokens' iss)" }),
  AUTH_AUDIENCE: text({ expected: 'the audience the tokens are issued for (their aud)' }),
  AUTH_USER_CLAIM: Type.String({
    default: 'sub',
    minLength: 1,
    maxLength: 128,
    expected: 'the name of a claim (1 to 128 characters)',
  }),
  RESUME_TOKEN_SECRET: text({ sensitive: true }),
  CORS_ORIGINS: text(),
  ADMIN_TOKEN: text({ sensitive: true }),
  APP_ENV: text(),
  DEBUG: text(),
  HOT_RELOAD: text(),
  DEBUG_TOOLBAR: text(),
  MAX_RUNNING_CONVERSATIONS: integer(10_000, 1, 10_000_000),
  MAX_OPEN_REQUESTS: integer(10_000, 1, 10_000_000),
  MAX_RUNNING_TURNS: integer(10_000, 1, 10_000_000),
  // Half of CACHE_TIMEOUT_MS's default: a loop typically that late starts to miss the stores' deadlines itself.
  OVERLOAD_LAG_MS: integer(250, 0, 60_000),
  TURN_LEASE_MS: integer(10_000, 100, 60_000),
  RESUME_RETENTION_MS: integer(900_000, 600_000, 86_400_000),
  SHUTDOWN_GRACE_MS: integer(30_000, 0, 300_000),
  SHUTDOWN_DRAIN_MS: integer(5_000, 0, 300_000),
  STORE_RECOVERY_MS: integer(30_000, 0, 600_000),
  SSE_KEEPALIVE_MS: integer(15_000, 10, 300_000),
  LOG_LEVEL: oneOf(LOG_LEVELS, 'info'),
  RATE_LIMIT_SENDS: integer(30, 0, 1_000_000),
  RATE_LIMIT_REQUESTS: integer(600, 0, 10_000_000),
  RATE_LIMIT_WINDOW_SECONDS: integer(60, 1, 86_400),
  CACHE_TIMEOUT_MS: integer(500, 10, 60_000),
  DATABASE_TIMEOUT_MS: integer(2_000, 100, 600_000),
  NEAR_CACHE_MAX_BYTES: integer(16 * 2 ** 20, 0, 2 ** 34),
  IMPORT_MAX_BYTES: integer(DEFAULT_IMPORT_MAX_BYTES, 1024, 2 ** 32),
  BODY_TIMEOUT_MS: integer(30_000, 100, 3_600_000),
  // Attachments (CONTRACT §20): a folder (default <DATA_DIR>/files), or an S3-compatible store.
  FILES_DIR: text({ expected: 'a directory' }),
  FILE_MAX_BYTES: integer(DEFAULT_FILE_MAX_BYTES, 1, 2 ** 31),
  FILES_MAX_BYTES_PER_USER: integer(2 ** 30, 1, 2 ** 50),
  S3_BUCKET: Type.Optional(
    Type.String({
      format: 'conduit-s3-bucket',
      expected: 'an S3 bucket name (3 to 63 lower-case letters, digits, dots and hyphens)',
    }),
  ),
  S3_ENDPOINT: url('conduit-http-url', 'an http:// or https:// URL'),
  S3_REGION: text({ expected: 'an S3 region name' }),
  S3_ACCESS_KEY_ID: text({ sensitive: true }),
  S3_SECRET_ACCESS_KEY: text({ sensitive: true }),
  // MCP servers (mcp-servers-config.ts checks each entry); never echoed: env and headers hold secrets.
  MCP_SERVERS: text({ sensitive: true }),
  MCP_SERVERS_FILE: text({ expected: 'a file name' }),
  TOOL_TIMEOUT_MS: integer(30_000, 100, 600_000),
  TOOL_OUTPUT_MAX_CHARS: integer(20_000, 100, 10_000_000),
  TOOL_MAX_STEPS: integer(5, 1, 50),
} satisfies Record<string, TSchema>

/** Every variable: optional ones may be unset, the others get their default. */
export const EnvSchema = Type.Object(variables)
export type EnvName = keyof typeof variables
export const ENV_NAMES = Object.keys(variables) as EnvName[]

/** The schema of one variable, with this file's keywords. */
export function variableSchema(name: EnvName): TSchema & VariableOptions {
  return variables[name] as unknown as TSchema & VariableOptions
}
