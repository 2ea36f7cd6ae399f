// createApp(deps): the HTTP application for the configured APP_VARIANT. `full`
// mounts the conversation API and the document store; an example variant
// serves only its own routes. Every variant gets the error mapping, CORS, the
// body limit and the offline API docs.
import { Elysia } from 'elysia'
import { docsPlugin } from '../plugins/docs/index.ts'
import { docstorePlugin } from '../plugins/docstore/index.ts'
import { variantPlugin } from '../plugins/variants/index.ts'
import { createAuthenticator } from './auth.ts'
import { bodyLimit } from './body-limit.ts'
import type { Config } from './config.ts'
import { conversationRoutes } from './conversation/routes.ts'
import type { ConversationService } from './conversation/service.ts'
import { corsPlugin } from './cors.ts'
import { errorHandler } from './error-handler.ts'
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
}

function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`createApp: ${what} is required for this variant`)
  return value
}

export function createApp(deps: AppDeps) {
  const { config } = deps
  // normalize: false: Elysia's normalizer would turn a non-object field (e.g. a
  // string `metadata`) into {} before validation; unknown fields are ignored anyway.
  const app = new Elysia({ normalize: false })
    .use(errorHandler)
    .use(corsPlugin(config.corsOrigins))
    .use(bodyLimit)
    .use(docsPlugin({ variant: config.variant }))
  if (config.variant === 'full') {
    const db = required(deps.db, 'db')
    const cache = required(deps.cache, 'cache')
    return app.use(docstorePlugin({ db, cache, config })).use(
      conversationRoutes({
        conversations: required(deps.conversations, 'conversations'),
        auth: createAuthenticator(config.authJwtSecret),
        keepaliveMs: config.sseKeepaliveMs,
      }),
    )
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
