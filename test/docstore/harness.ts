// Builds the document store (or any plugin) into a minimal app with the real
// error mapping, body limit and input guard, and calls it without a port.
import { type AnyElysia, Elysia } from 'elysia'
import { docstorePlugin } from '../../plugins/docstore/index.ts'
import { type Config, loadConfig } from '../../src/config.ts'
import { bodyLimit } from '../../src/http/body-limit.ts'
import { errorHandler } from '../../src/http/error-handler.ts'
import { inputGuard } from '../../src/http/input-guard.ts'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db } from '../../src/storage/db.ts'

/** A Config from these variables only, so the developer's environment never leaks in. */
export const testConfig = (env: Record<string, string> = {}): Config => loadConfig(env)

/** The app shell every variant gets (as src/app.ts builds it), around one plugin. */
export function appWith(plugin: AnyElysia) {
  return new Elysia({ normalize: false })
    .use(errorHandler)
    .use(bodyLimit)
    .use(inputGuard)
    .use(plugin)
}

export function docstoreApp(deps: { db: Db; cache: Cache; config?: Config }) {
  return appWith(
    docstorePlugin({ db: deps.db, cache: deps.cache, config: deps.config ?? testConfig() }),
  )
}

export interface CallOptions {
  /** Sent as a JSON body. */
  json?: unknown
  /** Sent as the body as it is (malformed JSON, huge bodies). */
  raw?: string
  headers?: Record<string, string>
}

export interface Reply<T> {
  status: number
  body: T
  headers: Headers
}

/** One request through app.handle; the body is parsed as JSON when it is JSON. */
export async function call<T = Record<string, unknown>>(
  app: { handle: (request: Request) => Response | Promise<Response> },
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Reply<T>> {
  const hasBody = options.json !== undefined || options.raw !== undefined
  const response = await app.handle(
    new Request(`http://localhost${path}`, {
      method,
      headers: { ...(hasBody ? { 'content-type': 'application/json' } : {}), ...options.headers },
      body: options.raw ?? (options.json === undefined ? undefined : JSON.stringify(options.json)),
    }),
  )
  const text = await response.text()
  const isJson = response.headers.get('content-type')?.includes('json') ?? false
  return {
    status: response.status,
    body: (isJson ? JSON.parse(text) : text) as T,
    headers: response.headers,
  }
}

export interface ErrorReply {
  detail: string
  code: string
}

/** How many documents the database holds. */
export async function countDocuments(db: Db): Promise<number> {
  const rows = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents')
  return rows[0]?.n ?? 0
}

/** A content no other test (or earlier run on a shared database) has used. */
export const uniqueContent = (label: string) =>
  `${label} ${crypto.randomUUID()} at ${new Date().toISOString()}`
