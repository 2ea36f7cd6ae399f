// Builds the real clients a variant needs from the configuration: the only
// place (with index.ts) that constructs database, cache, state, model and
// rate-limit clients. The database and cache are wrapped to report to the
// metrics, and everything that reports problems reports them to the logger.
import { resolve } from 'node:path'
import { createDocumentSearch } from '../plugins/docstore/document-search.ts'
import type { AppDeps } from './app.ts'
import type { Config, ModelConfig } from './config.ts'
import { createModelCatalogue, type ModelCatalogue } from './conversation/model/catalogue.ts'
import { createLocalModel } from './conversation/model/local.ts'
import { createOpenAiModel } from './conversation/model/openai.ts'
import type { ModelProvider } from './conversation/model/provider.ts'
import { tokenizerFor } from './conversation/model/token-count.ts'
import { isNearCached, NEAR_CACHED_PREFIXES } from './conversation/reads/cache-keys.ts'
import { createConversationService } from './conversation/service.ts'
import type { TurnTools } from './conversation/turn/tool-loop.ts'
import { createFileDocumentSearch } from './files/file-document-search.ts'
import { createFileService, type FileService } from './files/file-service.ts'
import { createFileUrlTokens } from './files/file-url-tokens.ts'
import { createFolderFileStore } from './files/folder-file-store.ts'
import { createS3FileStore } from './files/s3-file-store.ts'
import { safeErrorMessage } from './http/dependency-probe.ts'
import { createReadiness, storeChecks } from './http/readiness.ts'
import { conversationObserver } from './observability/conversation-observer.ts'
import type { EventLoopLag } from './observability/event-loop-lag.ts'
import { instrumentedCache } from './observability/instrumented-cache.ts'
import { instrumentedDb } from './observability/instrumented-db.ts'
import { type Logger, warnTo } from './observability/logger.ts'
import type { Metrics } from './observability/metrics.ts'
import { createMemoryRateLimiter } from './rate-limit/memory-rate-limiter.ts'
import type { RateLimits } from './rate-limit/rate-limit-plugin.ts'
import type { RateLimitPolicy } from './rate-limit/rate-limiter.ts'
import { createRedisRateLimiter } from './rate-limit/redis-rate-limiter.ts'
import { createMemoryState, openRedisState, type State } from './state/state.ts'
import type { Cache } from './storage/cache.ts'
import { lockDataDir } from './storage/data-dir-lock.ts'
import type { Db } from './storage/db.ts'
import { createMemoryCache } from './storage/memory-cache.ts'
import { migrate } from './storage/migrate.ts'
import { createNearCache } from './storage/near-cache.ts'
import { createPgliteDb } from './storage/pglite.ts'
import { seedFromTemplate } from './storage/pglite-template.ts'
import { createPostgresDb, POSTGRES_POOL_SIZE } from './storage/postgres.ts'
import { createRedisCache } from './storage/redis-cache.ts'
import {
  type RedisClient,
  redisConnector,
  sameRedisDeployment,
} from './storage/redis-connections.ts'
import { openRedisInvalidations } from './storage/redis-invalidations.ts'
import { createResilientCache } from './storage/resilient-cache.ts'
import { type BreakerLink, createBreakerLink, type StoreBreaker } from './storage/store-breaker.ts'
import { createStoreFailurePolicy, type StoreFailurePolicy } from './storage/store-failure.ts'
import { documentSearchSource, searchInOrder } from './tools/document-search.ts'
import { mcpTransport } from './tools/mcp-servers.ts'
import { McpSource } from './tools/mcp-source.ts'
import { createToolCatalogue } from './tools/tool-catalogue.ts'

export interface Dependencies extends AppDeps {
  /** Turn state, for `full`. */
  state?: State
  readiness: NonNullable<AppDeps['readiness']>
  /** Closes everything opened here, in reverse order. */
  close(): Promise<void>
}

/** The database of DATABASE_URL: real Postgres, in-memory PGlite, or PGlite in DATA_DIR (locked). */
export async function openDb(
  config: Config,
  onClose: (fn: () => Promise<void> | void) => void,
  failures?: StoreFailurePolicy,
) {
  if (config.databaseUrl?.startsWith('postgres'))
    return createPostgresDb(config.databaseUrl, {
      timeoutMs: config.databaseTimeoutMs,
      ...(failures ? { failures } : {}),
    })
  if (config.databaseUrl?.startsWith('memory:')) return createPgliteDb()
  const dir = resolve(config.dataDir)
  const release = lockDataDir(dir)
  onClose(release)
  await seedFromTemplate(dir)
  return createPgliteDb(dir)
}

/**
 * How often an idle near cache checks that Redis still answers its tracking
 * connection: with Redis frozen or cut off, it stops serving copies within
 * this and CACHE_TIMEOUT_MS (redis-invalidations.ts).
 */
const NEAR_CACHE_HEARTBEAT_MS = 1_000

/**
 * Whether history and list reads get a near cache: with a Redis cache, not
 * switched off (NEAR_CACHE_MAX_BYTES=0), and not on a Cluster, where Redis
 * tracks keys per node and this client follows one primary only.
 */
export function nearCacheMode(config: Config): 'on' | 'off' | 'off on Redis Cluster' {
  if (!config.cacheRedis || config.nearCacheMaxBytes === 0) return 'off'
  return config.cacheRedis.kind === 'cluster' ? 'off on Redis Cluster' : 'on'
}

/**
 * The cache of REDIS_URL (or Sentinel, or Cluster) behind the resilient
 * decorator (timeout, breaker, emptied before reuse after an outage), or the
 * in-process cache, which cannot fail. With `near`, history and list reads
 * are answered from a coherent near cache in front of it (nearCacheMode).
 */
export function openCache(
  config: Config,
  {
    log,
    near = false,
    breakerLink,
    failures,
  }: {
    log?: Logger
    near?: boolean
    breakerLink?: BreakerLink
    failures?: StoreFailurePolicy
  } = {},
): Cache {
  if (!config.cacheRedis) return createMemoryCache()
  const connector = redisConnector(config.cacheRedis)
  const keyPrefix = config.redisCachePrefix
  const shared = createResilientCache(createRedisCache(connector, { keyPrefix }), {
    timeoutMs: config.cacheTimeoutMs,
    breakerLink,
    ...(failures ? { failures } : {}),
    onStateChange: (state, cause) =>
      state === 'open'
        ? log?.warn({ error: safeErrorMessage(cause) }, 'cache unavailable; bypassing it')
        : log?.info('cache answers again; emptied it and using it again'),
  })
  if (!near || nearCacheMode(config) !== 'on') return shared
  return createNearCache(
    shared,
    openRedisInvalidations(connector, {
      prefixes: NEAR_CACHED_PREFIXES,
      keyPrefix,
      timeoutMs: config.cacheTimeoutMs,
      heartbeatMs: NEAR_CACHE_HEARTBEAT_MS,
    }),
    { maxBytes: config.nearCacheMaxBytes, isNear: isNearCached },
  )
}

/** The counter variant's store: state, not a copy, so never the resilient cache (it flushes). */
function openCounterStore(config: Config): Cache {
  return config.stateRedis
    ? createRedisCache(redisConnector(config.stateRedis), { keyPrefix: config.redisStatePrefix })
    : createMemoryCache()
}

/** Turn state: in Redis when there is one for it (see Config.stateRedis), else in process. */
export function openState(
  config: Config,
  log?: Logger,
  breakerLink?: BreakerLink,
  failures?: StoreFailurePolicy,
): Promise<State> {
  const options = {
    breakerLink,
    ...(failures ? { failures } : {}),
    retentionMs: config.resumeRetentionMs,
    keyPrefix: config.redisStatePrefix,
    warn: log && warnTo(log),
    onStateChange: (state: 'open' | 'closed', cause?: unknown) =>
      state === 'open'
        ? log?.warn({ error: safeErrorMessage(cause) }, 'turn state unavailable; refusing sends')
        : log?.info('turn state answers again'),
  }
  return config.stateRedis
    ? openRedisState(redisConnector(config.stateRedis), options)
    : Promise.resolve(createMemoryState(options))
}

/** The provider of one configured model. */
function openProvider(config: Config, model: ModelConfig): ModelProvider {
  return model.provider === 'openai'
    ? createOpenAiModel({
        slug: model.slug,
        model: model.model,
        baseUrl: model.baseUrl,
        apiKey: model.apiKey,
        reasoning: model.reasoning,
        ...(model.upstreamMaxTokens === undefined ? {} : { maxTokens: model.upstreamMaxTokens }),
        timeoutMs: config.modelTimeoutMs,
      })
    : createLocalModel({ slug: model.slug, chunkDelayMs: config.localModelChunkDelayMs })
}

/** The model catalogue of MODELS / MODELS_FILE, or of the single-model variables (CONTRACT §15). */
export function openModels(config: Config): ModelCatalogue {
  return createModelCatalogue(
    config.models.map((model) => ({
      slug: model.slug,
      title: model.title,
      provider: openProvider(config, model),
      maxTokens: model.maxTokens,
      contextTokens: model.contextTokens,
      systemPrompt: model.systemPrompt,
      vision: model.vision,
      tokenizer: tokenizerFor(model.provider, model.model),
      tools: model.tools,
    })),
    config.models.find((model) => model.isDefault)?.slug,
  )
}

/**
 * Attachments (CONTRACT §20): on the S3-compatible store of S3_*, else in the
 * folder FILES_DIR, whose signed URLs are signed with urlSecret (shared by
 * every instance, like resume tokens).
 */
export function openFiles(config: Config, db: Db, urlSecret: string): FileService {
  const { s3, dir, maxBytes, maxBytesPerUser } = config.files
  const store = s3
    ? createS3FileStore(s3)
    : createFolderFileStore({ dir: resolve(dir), tokens: createFileUrlTokens(urlSecret) })
  return createFileService({ db, store, maxBytes, maxBytesPerUser })
}

/**
 * The tools of CONTRACT §21: the built-in document_search over the user's
 * attachments and the document store, and each MCP server of MCP_SERVERS, connecting in the background
 * (a server that is down offers nothing; it never holds up the start).
 */
export function openTools(config: Config, db: Db, log: Logger): TurnTools {
  const { mcpServers, timeoutMs, maxOutputChars, maxSteps } = config.tools
  const warn = warnTo(log)
  const catalogue = createToolCatalogue({
    sources: [
      documentSearchSource(searchInOrder([createFileDocumentSearch(db), createDocumentSearch(db)])),
      ...mcpServers.map(
        (server) =>
          new McpSource({
            name: server.name,
            transport: () => mcpTransport(server),
            connectTimeoutMs: timeoutMs,
            listWaitMs: MCP_LIST_WAIT_MS,
            warn,
          }),
      ),
    ],
    timeoutMs,
    maxOutputChars,
    warn,
  })
  catalogue.start()
  return { catalogue, maxSteps }
}

/** How long a turn waits for an MCP server still connecting before it goes on without its tools. */
const MCP_LIST_WAIT_MS = 2_000

/** The default model's provider alone (tests and benchmarks that run one model). */
export function openModel(config: Config): ModelProvider {
  return openModels(config).defaultModel.provider
}

/**
 * The per-user limits of RATE_LIMIT_* (a limit of 0 is none): counted in the
 * state Redis when there is one, so every instance counts together, else in
 * process. The state database rather than the cache's, because the counts
 * are not copies: a cache flush must not reset them. Counts there go through
 * the state's breaker: with that Redis frozen or gone the requests limit
 * counts in process after at most CACHE_TIMEOUT_MS (it is optional, like the
 * cache), and a send is refused with 503 within the state's deadline. Without
 * the state's breaker (the in-process state) the counts stay in process.
 */
export async function openRateLimits(
  config: Config,
  onClose: (fn: () => Promise<void> | void) => void,
  { breaker, keyPrefix }: { breaker?: StoreBreaker; keyPrefix?: string } = {},
): Promise<RateLimits> {
  const { sends, requests, windowSeconds } = config.rateLimit
  if (sends === 0 && requests === 0) return {}
  const statePrefix = keyPrefix ?? config.redisStatePrefix
  let redis: RedisClient | undefined
  if (config.stateRedis && breaker) {
    const client = redisConnector(config.stateRedis).connect({
      // Fail at once while Redis is down: the limiter then decides in process.
      enableOfflineQueue: false,
      // A send's two counts, asked at once, go out in one write.
      enableAutoPipelining: true,
      maxRetriesPerRequest: 1,
      connectTimeout: 2_000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    })
    client.on('error', () => {})
    onClose(() => client.disconnect())
    // Until connected it would count in memory; the state store answered a moment ago.
    await connectedWithin(client, 2_000)
    redis = client
  }
  // The requests limit, looser and checked on every request, spends points
  // reserved in blocks; sends are few and their limit strict: one check each.
  const limiter = (name: 'sends' | 'requests', points: number) => {
    if (points === 0) return undefined
    const policy: RateLimitPolicy = { name, points, windowSeconds }
    if (!redis || !breaker) return createMemoryRateLimiter(policy)
    return name === 'requests'
      ? createRedisRateLimiter(policy, {
          redis,
          breaker,
          timeoutMs: config.cacheTimeoutMs,
          whenUnavailable: 'count-locally',
          reserveBlocks: true,
          keyPrefix: statePrefix,
        })
      : createRedisRateLimiter(policy, {
          redis,
          breaker,
          whenUnavailable: 'refuse',
          keyPrefix: statePrefix,
        })
  }
  return { sends: limiter('sends', sends), requests: limiter('requests', requests) }
}

/** Resolves once the client is ready, or after ms (it then counts in memory until it is). */
function connectedWithin(client: RedisClient, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms)
    client.once('ready', () => {
      clearTimeout(timer)
      resolve()
    })
  })
}

const NEEDS_DB = new Set(['full', 'dependency-check'])
const NEEDS_CACHE = new Set(['full', 'dependency-check'])

export interface Observability {
  log: Logger
  metrics: Metrics
  /**
   * This process's event-loop lag: a store deadline passed while it lagged
   * opens no breaker (storage/store-failure.ts), and sends are shed past
   * OVERLOAD_LAG_MS. Every missed deadline counts as the store's when absent.
   */
  lag?: EventLoopLag
}

/** Opens what config.variant needs; `full` also migrates and starts the conversation service. */
export async function openDependencies(
  config: Config,
  { log, metrics, lag }: Observability,
): Promise<Dependencies> {
  const closers: (() => Promise<void> | void)[] = []
  const onClose = (fn: () => Promise<void> | void) => closers.push(fn)
  const close = async () => {
    for (const fn of closers.reverse()) await fn()
  }
  try {
    let db: Db | undefined
    let cache: Cache | undefined
    const observed = { log, metrics, close, ...(lag ? { eventLoopLag: lag } : {}) }
    // One judge of store failures for the database, the cache, the state and the rate limits (store-failure.ts).
    const failures = createStoreFailurePolicy(lag ? { lag } : {})
    // Cache and state on one Redis (REDIS_URL alone, the default) share its
    // fate: a deadline missed by either opens both breakers, so a read
    // waits for one deadline rather than one per store.
    const breakerLink = sameRedisDeployment(config.cacheRedis, config.stateRedis)
      ? createBreakerLink()
      : undefined
    if (NEEDS_DB.has(config.variant)) {
      const opened = await openDb(config, onClose, failures)
      onClose(() => opened.close())
      db = instrumentedDb(opened, opened.kind === 'postgres' ? POSTGRES_POOL_SIZE : 1, metrics)
    }
    if (NEEDS_CACHE.has(config.variant)) {
      const opened = openCache(config, {
        log,
        near: config.variant === 'full',
        breakerLink,
        failures,
      })
      onClose(() => opened.close())
      cache = instrumentedCache(opened, metrics)
    }
    if (config.variant === 'counter') {
      // The count is state, not a copy: it lives in the state database.
      const counters = openCounterStore(config)
      onClose(() => counters.close())
      const readiness = createReadiness(storeChecks({ state: counters }))
      return { config, counters, readiness, ...observed }
    }
    if (config.variant !== 'full' || !db || !cache) {
      const readiness = createReadiness(storeChecks({ db, cache }))
      return { config, db, cache, readiness, ...observed }
    }
    await migrate(db)
    const state = await openState(config, log, breakerLink, failures)
    onClose(() => state.close())
    const rateLimits = await openRateLimits(config, onClose, { breaker: state.breaker })
    // Files first: a turn reads its attachments through them (CONTRACT §20).
    const files = openFiles(
      config,
      db,
      config.resumeTokenSecret ?? (await state.sharedSecret('file-url')),
    )
    const tools = openTools(config, db, log)
    onClose(() => tools.catalogue.close())
    const conversations = createConversationService({
      db,
      cache,
      files,
      tools,
      models: openModels(config),
      resumeTokenSecret: config.resumeTokenSecret ?? (await state.sharedSecret('resume-token')),
      logs: state.logs,
      leases: state.leases,
      stops: state.stops,
      leaseMs: config.turnLeaseMs,
      maxConversations: config.maxRunningConversations,
      storeRecoveryMs: config.storeRecoveryMs,
      titleModel: config.titleModel,
      warn: warnTo(log),
      observer: conversationObserver(log, metrics),
    })
    // The entry point closes it first, within the shutdown's budget; this answers as that did.
    onClose(async () => {
      await conversations.close(config.shutdownGraceMs)
    })
    conversations.startRecovery()
    const readiness = createReadiness(storeChecks({ db, cache, state }))
    return { config, db, cache, state, conversations, files, rateLimits, readiness, ...observed }
  } catch (error) {
    await close().catch(() => {})
    throw error
  }
}
