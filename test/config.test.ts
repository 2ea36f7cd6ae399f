// loadConfig: the defaults of CONTRACT §1, values read from the environment,
// invalid values rejected with a ConfigError naming the variable (and never
// echoing a secret), the per-process random resume secret, and maskUrlPassword.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, loadConfig, maskUrlPassword, VARIANTS } from '../src/config.ts'
import { ENV_NAMES, type EnvName, variableSchema } from '../src/config-schema.ts'

/** A JWT secret long enough to be accepted (32 bytes). */
const JWT_SECRET = 'a-jwt-secret-of-exactly-32-bytes'

/** The ConfigError loadConfig throws for env; fails the test when it returns. */
function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env)
  } catch (error) {
    if (error instanceof ConfigError) return error
    throw error
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`)
}

describe('loadConfig defaults (CONTRACT §1)', () => {
  test('an empty environment gives the documented defaults', () => {
    const config = loadConfig({})
    expect(config.port).toBe(3000)
    expect(config.host).toBe('0.0.0.0')
    expect(config.variant).toBe('full')
    expect(config.databaseUrl).toBeUndefined()
    expect(config.dataDir).toBe('./.data')
    expect(config.redisUrl).toBeUndefined()
    expect(config.modelProvider).toBe('local')
    expect(config.model).toBe('local-echo')
    expect(config.openaiBaseUrl).toBe('https://api.openai.com/v1')
    expect(config.openaiApiKey).toBeUndefined()
    expect(config.localModelChunkDelayMs).toBe(20)
    expect(config.authJwtSecret).toBeUndefined()
    expect(config.adminToken).toBeUndefined()
    expect(config.appEnv).toBeUndefined()
    expect(config.debug).toBeUndefined()
    expect(config.hotReload).toBeUndefined()
    expect(config.debugToolbar).toBeUndefined()
  })

  test('the timing defaults behind §4 and §8', () => {
    const config = loadConfig({})
    expect(config.sseKeepaliveMs).toBe(15_000)
    expect(config.shutdownGraceMs).toBe(30_000)
    // Resumable for at least 10 minutes after a turn ends (§4.4).
    expect(config.resumeRetentionMs).toBeGreaterThanOrEqual(600_000)
    // A store that does not answer costs a request at most this much (issue 11).
    expect(config.cacheTimeoutMs).toBe(500)
    expect(config.databaseTimeoutMs).toBe(2_000)
    // A body has this long to arrive in full (CONTRACT §19).
    expect(config.bodyTimeoutMs).toBe(30_000)
  })

  test('an empty string counts as unset', () => {
    const config = loadConfig({ PORT: '', HOST: '', APP_VARIANT: '', DATABASE_URL: '', MODEL: '' })
    expect(config.port).toBe(3000)
    expect(config.host).toBe('0.0.0.0')
    expect(config.variant).toBe('full')
    expect(config.databaseUrl).toBeUndefined()
    expect(config.model).toBe('local-echo')
  })
})

describe('loadConfig reads the environment', () => {
  test('every documented variable is taken as given', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '127.0.0.1',
      APP_VARIANT: 'counter',
      DATABASE_URL: 'postgres://app:pw@db:5432/app',
      DATA_DIR: '/var/lib/conduit',
      REDIS_URL: 'redis://cache:6379/1',
      MODEL_PROVIDER: 'openai',
      MODEL: 'gpt-test',
      OPENAI_BASE_URL: 'http://localhost:11434/v1',
      OPENAI_API_KEY: 'sk-test',
      LOCAL_MODEL_CHUNK_DELAY_MS: '0',
      AUTH_JWT_SECRET: 'jwt-secret-of-at-least-32-bytes!!',
      RESUME_TOKEN_SECRET: 'resume-secret',
      ADMIN_TOKEN: 'admin-token',
      APP_ENV: 'production',
      DEBUG: 'true',
      HOT_RELOAD: 'false',
      DEBUG_TOOLBAR: 'true',
    })
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      variant: 'counter',
      databaseUrl: 'postgres://app:pw@db:5432/app',
      dataDir: '/var/lib/conduit',
      redisUrl: 'redis://cache:6379/1',
      modelProvider: 'openai',
      model: 'gpt-test',
      openaiBaseUrl: 'http://localhost:11434/v1',
      openaiApiKey: 'sk-test',
      localModelChunkDelayMs: 0,
      authJwtSecret: 'jwt-secret-of-at-least-32-bytes!!',
      resumeTokenSecret: 'resume-secret',
      adminToken: 'admin-token',
      appEnv: 'production',
      debug: 'true',
      hotReload: 'false',
      debugToolbar: 'true',
    })
  })

  test('every variant name is accepted', () => {
    expect(VARIANTS).toEqual([
      'full',
      'basic',
      'counter',
      'configuration',
      'instance',
      'dependency-check',
    ])
    for (const variant of VARIANTS)
      expect(loadConfig({ APP_VARIANT: variant }).variant).toBe(variant)
  })

  test('memory:// is accepted for DATABASE_URL and REDIS_URL, postgresql:// and rediss:// too', () => {
    expect(loadConfig({ DATABASE_URL: 'memory://' }).databaseUrl).toBe('memory://')
    expect(loadConfig({ REDIS_URL: 'memory://' }).redisUrl).toBe('memory://')
    expect(loadConfig({ DATABASE_URL: 'postgresql://h/db' }).databaseUrl).toBe('postgresql://h/db')
    expect(loadConfig({ REDIS_URL: 'rediss://h:6380' }).redisUrl).toBe('rediss://h:6380')
  })

  test('a trailing slash on OPENAI_BASE_URL is dropped', () => {
    expect(loadConfig({ OPENAI_BASE_URL: 'http://vllm:8000/v1/' }).openaiBaseUrl).toBe(
      'http://vllm:8000/v1',
    )
  })
})

describe('loadConfig rejects invalid values, naming the variable', () => {
  test('PORT that is not a number, or out of range', () => {
    for (const port of ['abc', '80a', '-1', '3.5', '65536'])
      expect(configError({ PORT: port }).message).toContain('PORT')
  })

  test('APP_VARIANT outside the list, with the valid values listed', () => {
    const { message } = configError({ APP_VARIANT: 'bogus' })
    expect(message).toContain('APP_VARIANT')
    expect(message).not.toContain('\n')
    for (const variant of VARIANTS) expect(message).toContain(variant)
  })

  test('DATABASE_URL that is malformed or of another scheme', () => {
    for (const url of ['not a url', 'mysql://db/app', 'redis://cache:6379'])
      expect(configError({ DATABASE_URL: url }).message).toContain('DATABASE_URL')
  })

  test('REDIS_URL that is malformed or of another scheme', () => {
    for (const url of ['::nope', 'http://cache:6379', 'postgres://db/app'])
      expect(configError({ REDIS_URL: url }).message).toContain('REDIS_URL')
  })

  test('MODEL_PROVIDER outside the list, with the valid values listed', () => {
    const { message } = configError({ MODEL_PROVIDER: 'anthropic' })
    expect(message).toContain('MODEL_PROVIDER')
    expect(message).toContain('local')
    expect(message).toContain('openai')
  })

  test('CACHE_TIMEOUT_MS and DATABASE_TIMEOUT_MS are taken as given, and checked', () => {
    expect(loadConfig({ CACHE_TIMEOUT_MS: '250', DATABASE_TIMEOUT_MS: '5000' })).toMatchObject({
      cacheTimeoutMs: 250,
      databaseTimeoutMs: 5_000,
    })
    expect(configError({ CACHE_TIMEOUT_MS: 'soon' }).message).toContain('CACHE_TIMEOUT_MS')
    expect(configError({ CACHE_TIMEOUT_MS: '0' }).message).toContain('CACHE_TIMEOUT_MS')
    expect(configError({ DATABASE_TIMEOUT_MS: '1.5' }).message).toContain('DATABASE_TIMEOUT_MS')
    expect(configError({ DATABASE_TIMEOUT_MS: '10' }).message).toContain('DATABASE_TIMEOUT_MS')
  })

  test('admission limits default high enough for thousands of streams, are taken as given, and checked', () => {
    expect(loadConfig({}).admission).toEqual({
      maxOpenRequests: 10_000,
      maxRunningTurns: 10_000,
      overloadLagMs: 250,
    })
    expect(
      loadConfig({ MAX_OPEN_REQUESTS: '2', MAX_RUNNING_TURNS: '3', OVERLOAD_LAG_MS: '0' })
        .admission,
    ).toEqual({ maxOpenRequests: 2, maxRunningTurns: 3, overloadLagMs: 0 })
    for (const [name, value] of [
      ['MAX_OPEN_REQUESTS', '0'],
      ['MAX_OPEN_REQUESTS', 'many'],
      ['MAX_RUNNING_TURNS', '-1'],
      ['MAX_RUNNING_TURNS', '1e9'],
      ['OVERLOAD_LAG_MS', '0.5'],
      ['OVERLOAD_LAG_MS', '99999999999999999999'],
    ] as const)
      expect(configError({ [name]: value }).message).toContain(name)
  })

  test('LOCAL_MODEL_CHUNK_DELAY_MS and OPENAI_BASE_URL are checked too', () => {
    expect(configError({ LOCAL_MODEL_CHUNK_DELAY_MS: 'fast' }).message).toContain(
      'LOCAL_MODEL_CHUNK_DELAY_MS',
    )
    expect(configError({ OPENAI_BASE_URL: 'ftp://models' }).message).toContain('OPENAI_BASE_URL')
  })

  test('the message never repeats a password from a rejected URL', () => {
    const rejected: Record<string, string>[] = [
      { DATABASE_URL: 'mysql://app:hunter2secret@db/app' },
      { REDIS_URL: 'http://:hunter2secret@cache:6379' },
      { DATABASE_URL: 'postgres://app:hunter2secret@db:notaport/app' },
    ]
    for (const env of rejected) {
      const error = configError(env)
      expect(error.message).not.toContain('hunter2secret')
    }
  })
})

describe('AUTH_JWT_SECRET (CONTRACT §19)', () => {
  test('is taken as given from 32 bytes on', () => {
    expect(JWT_SECRET).toHaveLength(32)
    expect(loadConfig({ AUTH_JWT_SECRET: JWT_SECRET }).authJwtSecret).toBe(JWT_SECRET)
  })

  test('shorter than 32 bytes stops loadConfig with one line naming it, never showing it', () => {
    // 31 bytes; and 16 characters of two bytes each, which count as the 32 bytes they are.
    expect(loadConfig({ AUTH_JWT_SECRET: 'é'.repeat(16) }).authJwtSecret).toBe('é'.repeat(16))
    for (const short of ['x1y2', 'jwt-secret', JWT_SECRET.slice(1)]) {
      const { message } = configError({ AUTH_JWT_SECRET: short })
      expect(message).toBe(
        'AUTH_JWT_SECRET must be at least 32 bytes (for example: openssl rand -hex 32)',
      )
      expect(message).not.toContain(short)
    }
  })
})

describe('BODY_TIMEOUT_MS', () => {
  test('is taken as given, and checked', () => {
    expect(loadConfig({ BODY_TIMEOUT_MS: '5000' }).bodyTimeoutMs).toBe(5_000)
    for (const bad of ['0', '99', 'soon', '1.5', '3600001'])
      expect(configError({ BODY_TIMEOUT_MS: bad }).message).toStartWith('BODY_TIMEOUT_MS must be')
  })
})

describe('RESUME_TOKEN_SECRET', () => {
  test('is left unset when unset: the state store shares one between instances', () => {
    expect(loadConfig({}).resumeTokenSecret).toBeUndefined()
  })

  test('is used as given when set', () => {
    expect(loadConfig({ RESUME_TOKEN_SECRET: 'shared-secret' }).resumeTokenSecret).toBe(
      'shared-secret',
    )
  })
})

describe('REDIS_STATE_URL', () => {
  test("defaults to REDIS_URL's own database: state and cache are told apart by key prefix", () => {
    expect(loadConfig({ REDIS_URL: 'redis://cache:6379' }).redisStateUrl).toBe('redis://cache:6379')
    const config = loadConfig({ REDIS_URL: 'redis://:pw@cache:6379/4' })
    expect(config.stateRedis).toEqual({ kind: 'server', url: 'redis://:pw@cache:6379/4' })
    expect(config.cacheRedis).toEqual(config.stateRedis)
    expect(config.redisCachePrefix).toBe('conduit:c:')
    expect(config.redisStatePrefix).toBe('conduit:s:')
  })

  test('is in-process without Redis, or when set to memory://', () => {
    expect(loadConfig({}).redisStateUrl).toBeUndefined()
    expect(loadConfig({}).stateRedis).toBeUndefined()
    expect(loadConfig({ REDIS_URL: 'memory://' }).redisStateUrl).toBeUndefined()
    expect(
      loadConfig({ REDIS_URL: 'redis://cache:6379', REDIS_STATE_URL: 'memory://' }).stateRedis,
    ).toBeUndefined()
  })

  test('is used as given, on another server or database, or the same one', () => {
    expect(
      loadConfig({ REDIS_URL: 'redis://cache:6379', REDIS_STATE_URL: 'redis://state:6379/0' })
        .redisStateUrl,
    ).toBe('redis://state:6379/0')
    expect(
      loadConfig({ REDIS_URL: 'redis://cache:6379/2', REDIS_STATE_URL: 'redis://cache:6379/2' })
        .redisStateUrl,
    ).toBe('redis://cache:6379/2')
    expect(configError({ REDIS_STATE_URL: 'http://x' }).message).toContain('REDIS_STATE_URL')
  })
})

describe('REDIS_CACHE_PREFIX and REDIS_STATE_PREFIX', () => {
  test('are used as given', () => {
    const config = loadConfig({ REDIS_CACHE_PREFIX: 'app1:cache:', REDIS_STATE_PREFIX: 'app1:st:' })
    expect(config.redisCachePrefix).toBe('app1:cache:')
    expect(config.redisStatePrefix).toBe('app1:st:')
  })

  test('refuse braces (they would change hash tags), spaces and more than 64 characters', () => {
    for (const prefix of ['a{b}:', 'a}', 'with space:', 'x'.repeat(65)])
      expect(configError({ REDIS_CACHE_PREFIX: prefix }).message).toContain('REDIS_CACHE_PREFIX')
    expect(configError({ REDIS_STATE_PREFIX: '{s}' }).message).toContain('REDIS_STATE_PREFIX')
  })

  test('refuse prefixes a cache flush (SCAN <cache prefix>*) could mix up', () => {
    for (const [cache, state] of [
      ['same:', 'same:'],
      ['conduit:', 'conduit:s:'],
      ['conduit:c:x', 'conduit:c:'],
    ])
      expect(
        configError({ REDIS_CACHE_PREFIX: cache ?? '', REDIS_STATE_PREFIX: state ?? '' }).message,
      ).toContain('REDIS_STATE_PREFIX')
  })
})

describe('REDIS_CLUSTER_NODES and REDIS_SENTINELS', () => {
  test('a Cluster holds the cache and, unless REDIS_STATE_URL says otherwise, the state', () => {
    const config = loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-b:7001,[::1]:7002' })
    const cluster = {
      kind: 'cluster' as const,
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: 'redis-b', port: 7001 },
        { host: '::1', port: 7002 },
      ],
    }
    expect(config.cacheRedis).toEqual(cluster)
    expect(config.stateRedis).toEqual(cluster)
    expect(config.redisStateUrl).toBeUndefined()
    const apart = loadConfig({ REDIS_CLUSTER_NODES: 'a:1', REDIS_STATE_URL: 'redis://s:6379' })
    expect(apart.stateRedis).toEqual({ kind: 'server', url: 'redis://s:6379' })
  })

  test("Sentinel needs the primary's name, and holds cache and state", () => {
    const config = loadConfig({ REDIS_SENTINELS: 's1:26379,s2:26379', REDIS_SENTINEL_NAME: 'main' })
    const sentinel = {
      kind: 'sentinel' as const,
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
      ],
      name: 'main',
    }
    expect(config.cacheRedis).toEqual(sentinel)
    expect(config.stateRedis).toEqual(sentinel)
    expect(configError({ REDIS_SENTINELS: 's1:26379' }).message).toContain('REDIS_SENTINEL_NAME')
    expect(configError({ REDIS_SENTINEL_NAME: 'main' }).message).toContain('REDIS_SENTINELS')
  })

  test('are alternatives to each other and to REDIS_URL', () => {
    const both = configError({ REDIS_URL: 'redis://h:6379', REDIS_CLUSTER_NODES: 'a:1' })
    expect(both.message).toContain('REDIS_URL and REDIS_CLUSTER_NODES')
    expect(
      configError({ REDIS_SENTINELS: 'a:1', REDIS_SENTINEL_NAME: 'm', REDIS_CLUSTER_NODES: 'b:2' })
        .message,
    ).toContain('REDIS_SENTINELS and REDIS_CLUSTER_NODES')
    expect(
      loadConfig({ REDIS_URL: 'memory://', REDIS_CLUSTER_NODES: 'a:1' }).cacheRedis?.kind,
    ).toBe('cluster')
  })

  test('a malformed node list names the variable', () => {
    for (const list of ['a', 'a:', ':1', 'a:0', 'a:70000', 'a:1,,b:2', 'a b:1', 'http://a:1'])
      expect(configError({ REDIS_CLUSTER_NODES: list }).message).toContain('REDIS_CLUSTER_NODES')
    expect(configError({ REDIS_SENTINELS: 'x', REDIS_SENTINEL_NAME: 'm' }).message).toContain(
      'REDIS_SENTINELS',
    )
  })
})

describe('REDIS_USERNAME, REDIS_PASSWORD, REDIS_TLS and REDIS_SENTINEL_PASSWORD', () => {
  const dir = mkdtempSync(join(tmpdir(), 'conduit-config-tls-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'
  const SECRET = 'p4ss-w0rd-never-shown'

  test('reach a Cluster or Sentinel-managed primary; a CA file is read at startup', () => {
    const ca = join(dir, 'ca.pem')
    writeFileSync(ca, PEM)
    const cluster = loadConfig({
      REDIS_CLUSTER_NODES: 'a:7000',
      REDIS_USERNAME: 'conduit',
      REDIS_PASSWORD: SECRET,
      REDIS_TLS: 'true',
      REDIS_TLS_CA_FILE: ca,
    })
    expect(cluster.cacheRedis).toEqual({
      kind: 'cluster',
      nodes: [{ host: 'a', port: 7000 }],
      access: { username: 'conduit', password: SECRET, tls: { ca: PEM } },
    })
    // The state, on the same Cluster, is reached the same way.
    expect(cluster.stateRedis).toEqual(cluster.cacheRedis)
    const sentinel = loadConfig({
      REDIS_SENTINELS: 's:26379',
      REDIS_SENTINEL_NAME: 'main',
      REDIS_PASSWORD: SECRET,
      REDIS_SENTINEL_PASSWORD: 'other',
      REDIS_TLS: 'true',
    })
    expect(sentinel.cacheRedis).toMatchObject({
      kind: 'sentinel',
      access: { password: SECRET, sentinelPassword: 'other', tls: {} },
    })
    // Unset (or REDIS_TLS=false): plain connections, as before.
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'a:7000', REDIS_TLS: 'false' }).cacheRedis).toEqual({
      kind: 'cluster',
      nodes: [{ host: 'a', port: 7000 }],
    })
  })

  test('are refused where they would be ignored, naming the variable; a password is never shown', () => {
    const cases: [Record<string, string>, string][] = [
      [
        { REDIS_URL: 'redis://h:6379', REDIS_PASSWORD: SECRET },
        'REDIS_PASSWORD is for REDIS_SENTINELS or REDIS_CLUSTER_NODES',
      ],
      [{ REDIS_PASSWORD: SECRET }, 'REDIS_PASSWORD is for REDIS_SENTINELS or REDIS_CLUSTER_NODES'],
      [{ REDIS_URL: 'redis://h:6379', REDIS_TLS: 'true' }, 'REDIS_TLS is for'],
      [
        { REDIS_CLUSTER_NODES: 'a:1', REDIS_SENTINEL_PASSWORD: SECRET },
        'REDIS_SENTINEL_PASSWORD is only for REDIS_SENTINELS',
      ],
      [
        { REDIS_CLUSTER_NODES: 'a:1', REDIS_TLS_CA_FILE: join(dir, 'ca.pem') },
        'REDIS_TLS_CA_FILE needs REDIS_TLS=true',
      ],
      [{ REDIS_CLUSTER_NODES: 'a:1', REDIS_TLS: 'yes' }, 'REDIS_TLS must be one of true, false'],
      [
        {
          REDIS_CLUSTER_NODES: 'a:1',
          REDIS_TLS: 'true',
          REDIS_TLS_CA_FILE: join(dir, 'missing.pem'),
        },
        'REDIS_TLS_CA_FILE must name a readable file',
      ],
    ]
    for (const [env, start] of cases) {
      const { message } = configError(env)
      expect(message).toStartWith(start)
      expect(message).not.toContain(SECRET)
    }
    const notPem = join(dir, 'key.txt')
    writeFileSync(notPem, SECRET)
    const { message } = configError({
      REDIS_CLUSTER_NODES: 'a:1',
      REDIS_TLS: 'true',
      REDIS_TLS_CA_FILE: notPem,
    })
    expect(message).toContain('must be a PEM certificate')
    expect(message).not.toContain(SECRET)
  })
})

describe('NEAR_CACHE_MAX_BYTES', () => {
  test('defaults to 16 MiB, takes a whole number, and 0 turns the near cache off', () => {
    expect(loadConfig({}).nearCacheMaxBytes).toBe(16 * 2 ** 20)
    expect(loadConfig({ NEAR_CACHE_MAX_BYTES: '1048576' }).nearCacheMaxBytes).toBe(1_048_576)
    expect(loadConfig({ NEAR_CACHE_MAX_BYTES: '0' }).nearCacheMaxBytes).toBe(0)
  })

  test('a value that is not a whole number, or absurdly large, stops the process', () => {
    expect(configError({ NEAR_CACHE_MAX_BYTES: '16MB' }).message).toContain('NEAR_CACHE_MAX_BYTES')
    expect(configError({ NEAR_CACHE_MAX_BYTES: '-1' }).message).toContain('NEAR_CACHE_MAX_BYTES')
    expect(configError({ NEAR_CACHE_MAX_BYTES: String(2 ** 40) }).message).toContain(
      'NEAR_CACHE_MAX_BYTES',
    )
  })
})

describe('maskUrlPassword', () => {
  test('replaces a password with ***', () => {
    expect(maskUrlPassword('postgres://app:s3cret@db:5432/app')).toBe(
      'postgres://app:***@db:5432/app',
    )
    expect(maskUrlPassword('redis://:s3cret@cache:6379/0')).toBe('redis://:***@cache:6379/0')
    expect(maskUrlPassword('rediss://default:p%40ss@cache:6380')).not.toContain('p%40ss')
  })

  test('leaves a URL without a password exactly as it was', () => {
    for (const url of [
      'postgres://db:5432/app',
      'postgres://app@db:5432/app',
      'redis://cache:6379',
      'memory://',
    ])
      expect(maskUrlPassword(url)).toBe(url)
  })

  test('masks a password even in a string that does not parse as a URL', () => {
    const masked = maskUrlPassword('postgres://app:s3cret@db host/app')
    expect(masked).not.toContain('s3cret')
    expect(masked).toContain('***')
  })
})

describe('HOST', () => {
  test('an IP address or a host name is taken as given', () => {
    for (const host of ['127.0.0.1', '0.0.0.0', '::', '::1', 'localhost', 'app-1.internal', 'db.'])
      expect(loadConfig({ HOST: host }).host).toBe(host)
  })

  test('an impossible address or a malformed name is refused in one line naming HOST', () => {
    for (const host of [
      '999.1.1.1',
      '1.2.3',
      '256.0.0.1',
      'a..b',
      '-x',
      'host name',
      'x'.repeat(64),
    ]) {
      const { message } = configError({ HOST: host })
      expect(message).toStartWith('HOST must be')
      expect(message).toContain(host)
      expect(message).not.toContain('\n')
    }
  })
})

describe('whole numbers', () => {
  test('only plain digits count: no fraction, exponent, hex or sign', () => {
    for (const value of ['3.5', '1e3', '0x10', '+80', ' 80', '80 '])
      expect(configError({ PORT: value }).message).toBe(
        `PORT must be a whole number from 0 to 65535; got "${value}"`,
      )
  })
})

describe('LOG_LEVEL and RATE_LIMIT_*', () => {
  test('default to info and to 30 sends / 600 requests per 60 s', () => {
    const config = loadConfig({})
    expect(config.logLevel).toBe('info')
    expect(config.rateLimit).toEqual({ sends: 30, requests: 600, windowSeconds: 60 })
  })

  test('are taken as given; 0 turns a limit off', () => {
    const config = loadConfig({
      LOG_LEVEL: 'debug',
      RATE_LIMIT_SENDS: '0',
      RATE_LIMIT_REQUESTS: '5',
      RATE_LIMIT_WINDOW_SECONDS: '1',
    })
    expect(config.logLevel).toBe('debug')
    expect(config.rateLimit).toEqual({ sends: 0, requests: 5, windowSeconds: 1 })
  })

  test('bad values are refused naming the variable', () => {
    expect(configError({ LOG_LEVEL: 'loud' }).message).toContain('LOG_LEVEL must be one of fatal')
    expect(configError({ RATE_LIMIT_SENDS: '-1' }).message).toContain('RATE_LIMIT_SENDS')
    expect(configError({ RATE_LIMIT_WINDOW_SECONDS: '0' }).message).toContain(
      'RATE_LIMIT_WINDOW_SECONDS',
    )
  })
})

describe('every variable of the schema', () => {
  /** A value each kind of variable refuses (free text refuses nothing but emptiness, which is unset). */
  const badValue = (name: EnvName): string | undefined => {
    const schema = variableSchema(name)
    if (schema.type === 'integer') return 'many'
    if ('anyOf' in schema) return 'bogus'
    if ('format' in schema) return 'not a url'
    return undefined
  }

  test('a bad value stops loadConfig with one line that names it and hides secrets', () => {
    const freeText: string[] = []
    for (const name of ENV_NAMES) {
      const value = badValue(name)
      if (value === undefined) {
        freeText.push(name)
        continue
      }
      const { message } = configError({ [name]: value })
      expect(message).toStartWith(`${name} must be`)
      expect(message).not.toContain('\n')
      if (variableSchema(name).sensitive) expect(message).not.toContain(value)
    }
    // Only these take any non-empty text (MODELS and MODELS_FILE are then read
    // as a catalogue, test/model/models-config.test.ts; MCP_SERVERS and
    // MCP_SERVERS_FILE as servers, test/tools/mcp-servers-config.test.ts).
    expect(freeText.sort()).toEqual([
      'ADMIN_TOKEN',
      'APP_ENV',
      'AUTH_AUDIENCE',
      'AUTH_ISSUER',
      'AUTH_USER_CLAIM',
      'CORS_ORIGINS',
      'DATA_DIR',
      'DEBUG',
      'DEBUG_TOOLBAR',
      'FILES_DIR',
      'HOT_RELOAD',
      'MCP_SERVERS',
      'MCP_SERVERS_FILE',
      'MODEL',
      'MODELS',
      'MODELS_FILE',
      'OPENAI_API_KEY',
      'REDIS_PASSWORD',
      'REDIS_SENTINEL_NAME',
      'REDIS_SENTINEL_PASSWORD',
      'REDIS_TLS_CA_FILE',
      'REDIS_USERNAME',
      'RESUME_TOKEN_SECRET',
      'S3_ACCESS_KEY_ID',
      'S3_REGION',
      'S3_SECRET_ACCESS_KEY',
      'TITLE_MODEL',
    ])
  })

  test('a REDIS_URL whose path is not a database number is refused', () => {
    expect(configError({ REDIS_URL: 'redis://cache:6379/cache' }).message).toContain('REDIS_URL')
  })
})

describe('TITLE_MODEL (CONTRACT §23)', () => {
  const MODELS = JSON.stringify([
    { slug: 'chat', provider: 'local', default: true },
    { slug: 'namer', provider: 'openai', model: 'gpt-4o-mini', base_url: 'http://127.0.0.1:9/v1' },
  ])

  test('unset: the reply model names conversations; set: a slug of the catalogue', () => {
    expect(loadConfig({}).titleModel).toBeUndefined()
    expect(loadConfig({ MODELS, TITLE_MODEL: 'namer' }).titleModel).toBe('namer')
    // The single-model catalogue's slug is MODEL.
    expect(loadConfig({ TITLE_MODEL: 'local-echo' }).titleModel).toBe('local-echo')
  })

  test('a slug the catalogue does not have stops start-up, naming the variable and the slugs', () => {
    const { message } = configError({ MODELS, TITLE_MODEL: 'gpt-5' })
    expect(message).toBe(
      'TITLE_MODEL must be the slug of a model in the catalogue ("chat", "namer"), got "gpt-5"',
    )
    expect(configError({ TITLE_MODEL: 'namer' }).message).toStartWith('TITLE_MODEL must be')
  })
})

describe('AUTH_JWKS_URL, AUTH_ISSUER, AUTH_AUDIENCE, AUTH_USER_CLAIM (CONTRACT §22)', () => {
  const provider = {
    AUTH_JWKS_URL: 'https://id.example.com/.well-known/jwks.json',
    AUTH_ISSUER: 'https://id.example.com/',
    AUTH_AUDIENCE: 'conduit',
  }

  test('unset: no provider; set: the three, with sub as the user claim by default', () => {
    expect(loadConfig({}).authJwks).toBeUndefined()
    expect(loadConfig(provider).authJwks).toEqual({
      url: provider.AUTH_JWKS_URL,
      issuer: provider.AUTH_ISSUER,
      audience: provider.AUTH_AUDIENCE,
      userClaim: 'sub',
    })
    expect(loadConfig({ ...provider, AUTH_USER_CLAIM: 'email' }).authJwks?.userClaim).toBe('email')
    // Beside an HS256 secret.
    const both = loadConfig({ ...provider, AUTH_JWT_SECRET: JWT_SECRET })
    expect(both.authJwtSecret).toBe(JWT_SECRET)
    expect(both.authJwks?.issuer).toBe(provider.AUTH_ISSUER)
  })

  test('the URL without its issuer or audience, or they without it, is one line naming the missing one', () => {
    const cases: [Record<string, string>, string][] = [
      [
        { AUTH_JWKS_URL: provider.AUTH_JWKS_URL, AUTH_AUDIENCE: 'conduit' },
        'AUTH_ISSUER must be set',
      ],
      [{ AUTH_JWKS_URL: provider.AUTH_JWKS_URL, AUTH_ISSUER: 'x' }, 'AUTH_AUDIENCE must be set'],
      [{ AUTH_ISSUER: 'x', AUTH_AUDIENCE: 'y' }, 'AUTH_ISSUER needs AUTH_JWKS_URL'],
      [{ AUTH_AUDIENCE: 'y' }, 'AUTH_AUDIENCE needs AUTH_JWKS_URL'],
      [{ AUTH_USER_CLAIM: 'email' }, 'AUTH_USER_CLAIM needs AUTH_JWKS_URL'],
      [{ ...provider, AUTH_JWKS_URL: 'ftp://id.example.com/jwks' }, 'AUTH_JWKS_URL must be'],
    ]
    for (const [env, start] of cases) {
      const { message } = configError(env)
      expect(message).toStartWith(start)
      expect(message).not.toContain('\n')
    }
  })
})

describe('CORS_ORIGINS (CONTRACT §9)', () => {
  test('defaults to any origin in development mode and none when tokens are required', () => {
    expect(loadConfig({}).corsOrigins).toEqual(['*'])
    expect(loadConfig({ AUTH_JWT_SECRET: JWT_SECRET }).corsOrigins).toEqual([])
    expect(
      loadConfig({
        AUTH_JWKS_URL: 'https://id.example.com/jwks.json',
        AUTH_ISSUER: 'https://id.example.com/',
        AUTH_AUDIENCE: 'conduit',
      }).corsOrigins,
    ).toEqual([])
  })

  test('takes * or a comma-separated list of origins, in either mode', () => {
    expect(loadConfig({ CORS_ORIGINS: '*', AUTH_JWT_SECRET: JWT_SECRET }).corsOrigins).toEqual([
      '*',
    ])
    expect(
      loadConfig({ CORS_ORIGINS: 'https://chat.example.com, http://localhost:5173' }).corsOrigins,
    ).toEqual(['https://chat.example.com', 'http://localhost:5173'])
  })

  test('refuses a path, another scheme, or * mixed with origins, naming the variable', () => {
    for (const value of [
      'https://chat.example.com/app',
      'chat.example.com',
      'ftp://files.example.com',
      '*,https://chat.example.com',
    ])
      expect(configError({ CORS_ORIGINS: value }).message).toContain('CORS_ORIGINS')
  })
})
