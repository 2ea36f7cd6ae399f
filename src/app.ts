// createApp(deps): the HTTP application for the configured APP_VARIANT. `full`
// mounts the conversation API, the document store and the playground; an
// example variant serves only its own routes. Every variant gets the request
// log and id, the error mapping, CORS, the body limit, the input guard,
// /ready, /metrics and the offline API docs.
import { Elysia } from 'elysia'
import { docsPlugin } from '../plugins/docs/index.ts'
import { docstorePlugin } from '../plugins/docstore/index.ts'
import { playgroundPlugin } from '../plugins/playground/index.ts'
import { variantPlugin } from '../plugins/variants/index.ts'
import type { Config } from './config.ts'
import { conversationRoutes } from './conversation/routes.ts'
import type { ConversationService } from './conversation/service.ts'
import { shareRoutes } from './conversation/share/share-routes.ts'
import type { FileService } from './files/file-service.ts'
import { filesRoutes } from './files/files-routes.ts'
import { admission } from './http/admission.ts'
import { createAuthenticator } from './http/auth.ts'
import { bodyLimitWith, MAX_BODY_BYTES } from './http/body-limit.ts'
import { corsPlugin } from './http/cors.ts'
import { errorHandlerWith } from './http/error-handler.ts'
import { inputGuard } from './http/input-guard.ts'
import { opsRoutes } from './http/ops-routes.ts'
import { createReadiness, type Readiness, storeChecks } from './http/readiness.ts'
import { responseHeaders } from './http/response-headers.ts'
import type { EventLoopLag } from './observability/event-loop-lag.ts'
import { type Logger, silentLogger } from './observability/logger.ts'
import { createMetrics, type Metrics } from './observability/metrics.ts'
import { requestLog } from './observability/request-log.ts'
import { type RateLimits, rateLimitPlugin } from './rate-limit/rate-limit-plugin.ts'
import type { Cache } from './storage/cache.ts'
import type { Db } from './storage/db.ts'

export interface AppDeps {
  config: Config
  /** Present when the variant needs a database (`full`, `dependency-check`). */
  db?: Db
  /** Present when the variant needs the cache (`full`, `dependency-check`). */
  cache?: Cache
  /** The `counter` variant's store: the state database, which a cache flush cannot reach. */
  counters?: Cache
  /** Present for `full`. */
  conversations?: ConversationService
  /** Attachments (CONTRACT §20), for `full`; their routes are absent without them. */
  files?: FileService
  /** Where logs go; silent when absent (tests). */
  log?: Logger
  /** Served at /metrics; a fresh registry when absent. */
  metrics?: Metrics
  /** Answers /ready; checks db and cache when absent. */
  readiness?: Readiness
  /** Per-user limits of the conversation API; none when absent. */
  rateLimits?: RateLimits
  /** This process's event-loop lag (observability/event-loop-lag.ts): sends are shed past OVERLOAD_LAG_MS; not checked when absent. */
  eventLoopLag?: EventLoopLag
}

function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`createApp: ${what} is required for this variant`)
  return value
}

export function createApp(deps: AppDeps) {
  const { config } = deps
  const log = deps.log ?? silentLogger()
  const metrics = deps.metrics ?? createMetrics({ processMetrics: false })
  const readiness = deps.readiness ?? createReadiness(storeChecks(deps))
  // normalize: false: Elysia's normalizer would turn a non-object field (e.g. a
  // string `metadata`) into {} before validation; unknown fields are ignored anyway.
  const app = new Elysia({ normalize: false })
    .use(requestLog({ log, metrics }))
    .use(responseHeaders)
    .use(errorHandlerWith(log, metrics.overloaded))
    .use(corsPlugin(config.corsOrigins))
    .use(
      bodyLimitWith({
        timeoutMs: config.bodyTimeoutMs,
        largestBodyBytes: Math.max(MAX_BODY_BYTES, config.importMaxBytes),
      }),
    )
    .use(opsRoutes({ readiness, metrics, adminToken: config.adminToken }))
    .use(inputGuard)
    .use(docsPlugin({ variant: config.variant }))
  if (config.variant === 'full') {
    const db = required(deps.db, 'db')
    const cache = required(deps.cache, 'cache')
    const auth = createAuthenticator({ jwtSecret: config.authJwtSecret, jwks: config.authJwks })
    const conversations = required(deps.conversations, 'conversations')
    const withFiles = deps.files ? app.use(filesRoutes({ files: deps.files, auth })) : app
    return withFiles
      .use(
        // Before the rate limits and the routes: a shed send costs no store and no body parse.
        admission({
          limits: config.admission,
          turns: conversations,
          ...(deps.eventLoopLag ? { lag: deps.eventLoopLag } : {}),
          metrics,
        }),
      )
      .use(
        rateLimitPlugin({
          limits: deps.rateLimits ?? {},
          auth,
          metrics,
          isRetriedSend: conversations.isRetriedSend,
        }),
      )
      .use(docstorePlugin({ db, cache, config, log }))
      .use(playgroundPlugin())
      .use(
        conversationRoutes({
          conversations,
          auth,
          keepaliveMs: config.sseKeepaliveMs,
          importMaxBytes: config.importMaxBytes,
        }),
      )
      .use(shareRoutes({ shares: conversations.shares, auth }))
  }
  return app.use(
    variantPlugin(config.variant, {
      config,
      db: deps.db,
      cache: deps.cache,
      counters: deps.counters,
    }),
  )
}

export type App = ReturnType<typeof createApp>
