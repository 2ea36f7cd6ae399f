// Builds the full application for conversation tests on one app backend (its
// shared database and a cache of its own), with the local model at full speed,
// plus small HTTP helpers.
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import type { ModelProvider } from '../../src/conversation/model/provider.ts'
import { createConversationService } from '../../src/conversation/service.ts'
import type { ConversationObserver } from '../../src/conversation/turn/observer.ts'
import { openFiles, openModels, openRateLimits, openTools } from '../../src/dependencies.ts'
import type { EventLoopLag } from '../../src/observability/event-loop-lag.ts'
import { type Logger, silentLogger } from '../../src/observability/logger.ts'
import type { Metrics } from '../../src/observability/metrics.ts'
import type { RateLimits } from '../../src/rate-limit/rate-limit-plugin.ts'
import type { ConversationLeases } from '../../src/state/conversation-leases.ts'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db, Queryable } from '../../src/storage/db.ts'
import { type AppBackend, TEST_REDIS_URL, uniqueName } from './backends.ts'

export interface TestAppOptions {
  /** The storage to run on (see appBackends()). */
  backend: AppBackend
  env?: Record<string, string>
  /** One provider as the whole catalogue; else the catalogue of env (MODELS, MODEL_PROVIDER, …). */
  model?: ModelProvider
  /** Instead of the backend's database (a counting or unreachable one). */
  db?: Db
  /** Instead of a new cache of the backend's. */
  cache?: Cache
  /** Instead of the backend's leases (one that fails, say). */
  leases?: ConversationLeases
  /** Logs, metrics, turn observer and rate limits, for the tests of those. */
  log?: Logger
  metrics?: Metrics
  observer?: ConversationObserver
  rateLimits?: RateLimits
  /** The event-loop lag admission control sheds sends on (a stand-in the test sets). */
  eventLoopLag?: EventLoopLag
  /** Offer tools as a deployment does (openTools: document_search and env's MCP_SERVERS); closed by close(). */
  tools?: boolean
  /** How long a reply's ending waits for a title model still at work. */
  titleWaitMs?: number
}

export async function conversationApp(options: TestAppOptions) {
  const config = loadConfig({
    LOCAL_MODEL_CHUNK_DELAY_MS: '0',
    RESUME_TOKEN_SECRET: 'test-resume-secret',
    ...options.env,
  })
  const db = options.db ?? (await options.backend.db())
  const cache = options.cache ?? options.backend.cache()
  const state = await options.backend.state()
  // Attachments in FILES_DIR, or a folder of this app's own (made on its first file), signed as resume tokens are.
  const filesConfig = options.env?.FILES_DIR
    ? config
    : { ...config, files: { ...config.files, dir: join(tmpdir(), uniqueName('conduit-files')) } }
  const files = openFiles(filesConfig, db, config.resumeTokenSecret ?? 'test-resume-secret')
  const tools = options.tools ? openTools(config, db, silentLogger()) : undefined
  const conversations = createConversationService({
    files,
    ...(tools ? { tools } : {}),
    db,
    cache,
    ...(options.model ? { model: options.model } : { models: openModels(config) }),
    resumeTokenSecret: config.resumeTokenSecret ?? 'test-resume-secret',
    logs: state.logs,
    leases: options.leases ?? state.leases,
    stops: state.stops,
    leaseMs: config.turnLeaseMs,
    maxConversations: config.maxRunningConversations,
    titleModel: config.titleModel,
    titleWaitMs: options.titleWaitMs,
    warn: () => {},
    observer: options.observer,
  })
  const app = createApp({
    config,
    db,
    cache,
    conversations,
    files,
    log: options.log,
    metrics: options.metrics,
    rateLimits: options.rateLimits,
    eventLoopLag: options.eventLoopLag,
  })
  return {
    app,
    db,
    cache,
    state,
    conversations,
    files,
    config: filesConfig,
    /** Ends what the app started besides its stores: the MCP servers' connections and processes. */
    close: async () => {
      await tools?.catalogue.close()
    },
  }
}

export type TestApp = Awaited<ReturnType<typeof conversationApp>>

/**
 * The rate limits of a default deployment (RATE_LIMIT_* unset) on this
 * backend, opened as dependencies.ts opens them: counted in the backend's
 * state Redis through the state's breaker (real), or in process (embedded).
 * close() disconnects their client.
 */
export async function defaultRateLimits(backend: AppBackend) {
  const state = await backend.state()
  const real = backend.name === 'real' && TEST_REDIS_URL !== undefined
  const config = loadConfig(real ? { REDIS_STATE_URL: TEST_REDIS_URL as string } : {})
  const closers: (() => Promise<void> | void)[] = []
  const limits = await openRateLimits(config, (close) => closers.push(close), {
    breaker: state.breaker,
    keyPrefix: `${uniqueName('limits')}:`,
  })
  return {
    limits,
    async close() {
      for (const close of closers) await close()
    },
  }
}

export const newUser = () => uniqueName('user')

export function textMessage(text: string, id?: string) {
  return {
    ...(id ? { id } : {}),
    role: 'user',
    content: { content_type: 'text', parts: [text] },
  }
}

export function post(
  app: TestApp['app'],
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return app.handle(
    new Request(`http://localhost${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  )
}

export function get(app: TestApp['app'], path: string, headers: Record<string, string> = {}) {
  return app.handle(new Request(`http://localhost${path}`, { headers }))
}

/** One SSE item as it came over the wire, with its parts picked apart. */
export interface Frame {
  raw: string
  event: string | undefined
  data: string
}

/** Splits an SSE body into item frames; comment frames (`: ping`) are dropped. */
export function framesOf(body: string): Frame[] {
  return body
    .split('\n\n')
    .filter((chunk) => chunk !== '' && !chunk.startsWith(':'))
    .map((chunk) => {
      const lines = chunk.split('\n')
      const event = lines.find((line) => line.startsWith('event: '))?.slice(7)
      const data = lines.find((line) => line.startsWith('data: '))?.slice(6) ?? ''
      return { raw: `${chunk}\n\n`, event, data }
    })
}

/** JSON data of a frame (not for `[DONE]`). */
export function dataOf<T = Record<string, unknown>>(frame: Frame | undefined): T {
  if (!frame) throw new Error('no such frame')
  return JSON.parse(frame.data) as T
}

/** Sends one message and reads the whole stream. */
export async function sendAndRead(app: TestApp['app'], body: Record<string, unknown>) {
  const response = await post(app, '/backend-api/f/conversation', body)
  const text = await response.text()
  return { response, text, frames: framesOf(text) }
}

/** `db` noting the text of every statement it runs (in transactions too) in `statements`. */
export function recordingStatements(db: Db): { db: Db; statements: string[] } {
  const statements: string[] = []
  const record = (target: Queryable): Queryable => ({
    query: (text, params) => {
      statements.push(text)
      return target.query(text, params)
    },
    exec: (script) => target.exec(script),
  })
  return {
    db: { ...db, ...record(db), transaction: (fn) => db.transaction((tx) => fn(record(tx))) },
    statements,
  }
}

/** The conversation a send's stream belongs to, from its resume-token item (the second). */
export function conversationIdOf(frames: Frame[]): string {
  return dataOf<{ conversation_id: string }>(frames[1]).conversation_id
}
