// Cross-origin access for browser front-ends (CONTRACT §9), with the maintained
// @elysiajs/cors plugin: CORS_ORIGINS decides which origins may call; a
// preflight answers 204 with the methods this service uses and the headers
// its clients send. Nothing is exposed beyond the CORS-safelisted response
// headers, and no credentials (cookies) are involved: identity travels in
// Authorization or X-User-Id.
import { cors } from '@elysiajs/cors'

export const CORS_METHODS = ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS']
export const CORS_HEADERS = ['content-type', 'authorization', 'x-user-id', 'x-conduit-token']

/** `origins`: `['*']` any, `[]` none, else the exact origins allowed. */
export function corsPlugin(origins: readonly string[]) {
  return cors({
    origin: origins.length === 0 ? false : [...origins],
    methods: CORS_METHODS,
    allowedHeaders: CORS_HEADERS,
    exposeHeaders: [],
    credentials: false,
    // Browsers cap this (Chromium at 2 hours); it spares a preflight per request.
    maxAge: 600,
  })
}
