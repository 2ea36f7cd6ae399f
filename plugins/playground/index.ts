// GET /playground: a page where a person tries the conversation API in a
// browser, served by the service itself: plain HTML, one stylesheet and small
// ES modules (the page, and the stream reader, branch tree, a reply's
// thinking and tool-call blocks, Markdown renderer, dialogs, model picker, custom-instructions dialog and attachments it imports),
// read once at startup. The Markdown parser (marked) and the sanitiser
// (DOMPurify) are the ES module builds of their npm packages, served from
// node_modules like the API docs' bundles (plugins/docs/assets.ts). No CDN
// and no build step; the page's Content Security Policy allows nothing but
// this origin.
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

const JS = 'text/javascript; charset=utf-8'

/** The page's own files, next to this one. */
const OWN_FILES = {
  'playground.css': 'text/css; charset=utf-8',
  'playground.js': JS,
  'stream.js': JS,
  'tree.js': JS,
  'steps.js': JS,
  'step-view.js': JS,
  'markdown.js': JS,
  'dialogs.js': JS,
  'icons.js': JS,
  'models.js': JS,
  'instructions.js': JS,
  'attachments.js': JS,
} as const

/** The libraries' browser builds, by the name the page imports them as (vendor/<name>). */
const VENDOR_FILES = {
  'marked.js': 'marked',
  'purify.js': 'dompurify',
} as const

/** The builds end with a source map comment; the maps are not served, so the link goes. */
const withoutSourceMap = (text: string) => text.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n')

const hidden = { detail: { hide: true } }

export function playgroundPlugin() {
  const read = (path: string) => readFileSync(path, 'utf8')
  // Resolved and read now: a missing package fails at startup, not on the first visit.
  const files = new Map<string, { text: string; type: string }>([
    ['', { text: read(join(import.meta.dir, 'page.html')), type: 'text/html; charset=utf-8' }],
    ...Object.entries(OWN_FILES).map(
      ([name, type]) => [`/${name}`, { text: read(join(import.meta.dir, name)), type }] as const,
    ),
    ...Object.entries(VENDOR_FILES).map(
      ([name, specifier]) =>
        [
          `/vendor/${name}`,
          { text: withoutSourceMap(read(Bun.resolveSync(specifier, import.meta.dir))), type: JS },
        ] as const,
    ),
  ])
  const app = new Elysia({ name: 'playground' })
  for (const [suffix, { text, type }] of files)
    app.get(
      `${PLAYGROUND_PATH}${suffix}`,
      () =>
        new Response(text, {
          headers: {
            'content-type': type,
            'content-security-policy': CSP,
            'cache-control': 'no-cache',
            'x-content-type-options': 'nosniff',
          },
        }),
      hidden,
    )
  return app
}
