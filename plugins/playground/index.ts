// GET /playground: a page where a person tries the conversation API in a
// browser, served by the service itself: plain HTML, one stylesheet and small
// ES modules (the page, and the stream reader, model picker and
// custom-instructions dialog it imports), read once at startup. No CDN and
// no build step; the page's Content Security Policy allows nothing but this
// origin.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Elysia } from 'elysia'

export const PLAYGROUND_PATH = '/playground'

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

const FILES = {
  'page.html': 'text/html; charset=utf-8',
  'playground.css': 'text/css; charset=utf-8',
  'playground.js': 'text/javascript; charset=utf-8',
  'stream.js': 'text/javascript; charset=utf-8',
  'models.js': 'text/javascript; charset=utf-8',
  'instructions.js': 'text/javascript; charset=utf-8',
} as const

type FileName = keyof typeof FILES

const hidden = { detail: { hide: true } }

export function playgroundPlugin() {
  const text = Object.fromEntries(
    Object.keys(FILES).map((name) => [name, readFileSync(join(import.meta.dir, name), 'utf8')]),
  ) as Record<FileName, string>
  const serve = (name: FileName) => () =>
    new Response(text[name], {
      headers: {
        'content-type': FILES[name],
        'content-security-policy': CSP,
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
      },
    })
  return new Elysia({ name: 'playground' })
    .get(PLAYGROUND_PATH, serve('page.html'), hidden)
    .get(`${PLAYGROUND_PATH}/playground.css`, serve('playground.css'), hidden)
    .get(`${PLAYGROUND_PATH}/playground.js`, serve('playground.js'), hidden)
    .get(`${PLAYGROUND_PATH}/stream.js`, serve('stream.js'), hidden)
    .get(`${PLAYGROUND_PATH}/models.js`, serve('models.js'), hidden)
    .get(`${PLAYGROUND_PATH}/instructions.js`, serve('instructions.js'), hidden)
}
