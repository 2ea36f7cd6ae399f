// Builds the real clients a variant needs from the configuration: the only
// place (with index.ts) that constructs database, cache and model clients.
import { resolve } from 'node:path'
import type { AppDeps } from './app.ts'
import type { Config } from './config.ts'
import { isNearCached, NEAR_CACHED_PREFIXES } from './conversation/cache-keys.ts'
import { createLocalModel } from './conversation/model/local.ts'
import { createOpenAiModel } from './conversation/model/openai.ts'
import type { ModelProvider } from './conversation/model/provider.ts'
import { createConversationService } from './conversation/service.ts'
import { createMemoryState, openRedisState, type State } from './state/state.ts'
import type { Cache } from './storage/cache.ts'
import { lockDataDir } from './storage/data-dir-lock.ts'
import type { Db } from './storage/db.ts'
import { createMemoryCache } from './storage/memory-cache.ts'
import { migrate } from './storage/migrate.ts'
import { createNearCache } from './storage/near-cache.ts'
import { createPgliteDb } from './storage/pglite.ts'
import { seedFromTemplate } from './storage/pglite-template.ts'
import { createPostgresDb } from './storage/postgres.ts'
import { createRedisCache } from './storage/redis-cache.ts'
import { openRedisInvalidations } from './storage/redis-invalidations.ts'

export interface Dependencies extends AppDeps {
  /** Turn state, for `full`. */
  state?: State
  /** Closes everything opened here, in reverse order. */
  close(): Promise<void>
}

/** The database of DATABASE_URL: real Postgres, in-memory PGlite, or PGlite in DATA_DIR (locked). */
export async function openDb(config: Config, onClose: (fn: () => Promise<void> | void) => void) {
  if (config.databaseUrl?.startsWith('postgres')) return createPostgresDb(config.databaseUrl)
  if (config.databaseUrl?.startsWith('memory:')) return createPgliteDb()
  const dir = resolve(config.dataDir)
  const release = lockDataDir(dir)
  onClose(release)
  await seedFromTemplate(dir)
  return createPgliteDb(dir)
}

/**
 * The cache of REDIS_URL, else the in-process one. With `near`, history and
 * list reads are answered from a coherent near cache in front of Redis
 * (NEAR_CACHE_MAX_BYTES, 0 = off).
 */
export function openCache(config: Config, { near = false } = {}): Cache {
  if (!config.redisUrl?.startsWith('redis')) return createMemoryCache()
  const shared = createRedisCache(config.redisUrl)
  if (!near || config.nearCacheMaxBytes === 0) return shared
  return createNearCache(
    shared,
    openRedisInvalidations(config.redisUrl, { prefixes: NEAR_CACHED_PREFIXES }),
    { maxBytes: config.nearCacheMaxBytes, isNear: isNearCached },
  )
}

/** Turn state: in Redis when there is a state URL (see Config.redisStateUrl), else in process. */
export function openState(config: Config): Promise<State> {
  const options = { retentionMs: config.resumeRetentionMs }
  return config.redisStateUrl
    ? openRedisState(config.redisStateUrl, options)
    : Promise.resolve(createMemoryState(options))
}

export function openModel(config: Config): ModelProvider {
  return config.modelProvider === 'openai'
    ? createOpenAiModel({
        slug: config.model,
        baseUrl: config.openaiBaseUrl,
        apiKey: config.openaiApiKey,
        timeoutMs: config.modelTimeoutMs,
      })
    : createLocalModel({ slug: config.model, chunkDelayMs: config.localModelChunkDelayMs })
}

const NEEDS_DB = new Set(['full', 'dependency-check'])
const NEEDS_CACHE = new Set(['full', 'dependency-check'])

/** Opens what config.variant needs; `full` also migrates and starts the conversation service. */
export async function openDependencies(config: Config): Promise<Dependencies> {
  const closers: (() => Promise<void> | void)[] = []
  const onClose = (fn: () => Promise<void> | void) => closers.push(fn)
  const close = async () => {
    for (const fn of closers.reverse()) await fn()
  }
  try {
    let db: Db | undefined
    let cache: Cache | undefined
    if (NEEDS_DB.has(config.variant)) {
      const opened = await openDb(config, onClose)
      onClose(() => opened.close())
      db = opened
    }
    if (NEEDS_CACHE.has(config.variant)) {
      const opened = openCache(config, { near: config.variant === 'full' })
      onClose(() => opened.close())
      cache = opened
    }
    if (config.variant === 'counter') {
      // The count is state, not a copy: it lives in the state database.
      const counters = openCache({ ...config, redisUrl: config.redisStateUrl })
      onClose(() => counters.close())
      return { config, counters, close }
    }
    if (config.variant !== 'full' || !db || !cache) return { config, db, cache, close }
    await migrate(db)
    const state = await openState(config)
    onClose(() => state.close())
    const conversations = createConversationService({
      db,
      cache,
      model: openModel(config),
      resumeTokenSecret: config.resumeTokenSecret ?? (await state.sharedSecret('resume-token')),
      logs: state.logs,
      leases: state.leases,
      stops: state.stops,
      leaseMs: config.turnLeaseMs,
      maxConversations: config.maxRunningConversations,
    })
    onClose(() => conversations.close(config.shutdownGraceMs))
    conversations.startRecovery()
    return { config, db, cache, state, conversations, close }
  } catch (error) {
    await close().catch(() => {})
    throw error
  }
}
