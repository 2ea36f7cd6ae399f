// /docs/json describes every route of the running app with its schemas, and
// /docs and /redoc are served with their assets from this service only.
import { beforeAll, describe, expect, test } from 'bun:test'
import { REDOC_CDN_LOGO } from '../../plugins/docs/assets.ts'
import { call } from '../docstore/harness.ts'
import { appBackends } from '../support/backends.ts'
import { fullDocsApp, LATE_ROUTE, variantDocsApp } from './docs-app.ts'

interface Operation {
  tags?: string[]
  summary?: string
  requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> }
  responses?: Record<string, { content?: Record<string, { schema: unknown }> }>
}
interface OpenApiDocument {
  openapi: string
  info: { title: string; version: string }
  paths: Record<string, Record<string, Operation>>
}

for (const backend of appBackends())
  describe(backend.name, () => {
    let app: ReturnType<typeof fullDocsApp>
    // The first open of the shared test database can take several seconds (PGlite).
    beforeAll(async () => {
      app = fullDocsApp({ db: await backend.db(), cache: backend.cache() })
    }, 60_000)

    const operations = (doc: OpenApiDocument) =>
      Object.entries(doc.paths).flatMap(([path, methods]) =>
        Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
      )

    describe('/docs/json', () => {
      test('lists every route of the full app, including ones registered after the docs plugin', async () => {
        const reply = await call<OpenApiDocument>(app, 'GET', '/docs/json')
        expect(reply.status).toBe(200)
        expect(reply.body.openapi).toMatch(/^3\./)
        expect(reply.body.info.title).toBe('Conduit API')
        expect(operations(reply.body).sort()).toEqual(
          [
            'GET /',
            'GET /health',
            'POST /documents',
            'GET /documents',
            'POST /query',
            'DELETE /cache',
            `GET ${LATE_ROUTE}`,
          ].sort(),
        )
      })

      test('describes request bodies and responses with their schemas', async () => {
        const { body: doc } = await call<OpenApiDocument>(app, 'GET', '/docs/json')
        const post = doc.paths['/documents']?.post
        expect(post?.tags).toEqual(['documents'])
        expect(post?.summary).toBeString()
        const requestSchema = post?.requestBody?.content['application/json']?.schema
        expect(Object.keys(requestSchema?.properties ?? {}).sort()).toEqual(['content', 'metadata'])
        expect(post?.responses?.['200']?.content?.['application/json']).toBeDefined()
        expect(post?.responses?.['422']).toBeDefined()

        const query = doc.paths['/query']?.post
        expect(
          Object.keys(
            query?.requestBody?.content['application/json']?.schema.properties ?? {},
          ).sort(),
        ).toEqual(['question', 'top_k'])
        expect(JSON.stringify(doc.paths['/documents']?.get?.responses?.['200'])).toContain('cached')
        expect(doc.paths['/health']?.get?.responses?.['503']).toBeDefined()
      })

      test('hides the documentation routes themselves', async () => {
        const { body: doc } = await call<OpenApiDocument>(app, 'GET', '/docs/json')
        for (const path of Object.keys(doc.paths)) expect(path).not.toMatch(/^\/(docs|redoc)/)
      })

      test('a variant app documents only its own routes', async () => {
        const counter = variantDocsApp('counter', { counters: backend.cache() })
        const { body: doc } = await call<OpenApiDocument>(counter, 'GET', '/docs/json')
        expect(doc.info.title).toContain('counter')
        expect(operations(doc).sort()).toEqual(['GET /', 'GET /health', 'POST /reset'])
        const basic = variantDocsApp('basic')
        expect(
          operations((await call<OpenApiDocument>(basic, 'GET', '/docs/json')).body).sort(),
        ).toEqual(['GET /', 'GET /health'])
      })
    })

    describe('the pages', () => {
      test.each(['/docs', '/redoc'])(
        '%s is HTML that loads assets from this origin only',
        async (path) => {
          const reply = await call<string>(app, 'GET', path)
          expect(reply.status).toBe(200)
          expect(reply.headers.get('content-type')).toStartWith('text/html')
          const urls = [...reply.body.matchAll(/\b(?:src|href)="([^"]+)"/g)].map(
            (match) => match[1] as string,
          )
          expect(urls.length).toBeGreaterThan(0)
          for (const url of urls) expect(url).toStartWith('/')
          expect(reply.body).not.toMatch(/https?:\/\//)
          // The browser itself is told to fetch nothing from another origin.
          const csp = reply.headers.get('content-security-policy') ?? ''
          expect(csp).toContain("default-src 'none'")
          expect(csp).toContain("script-src 'self'")
          expect(csp).toContain("connect-src 'self'")
        },
      )

      test('every asset the pages name is served', async () => {
        for (const page of ['/docs', '/redoc']) {
          const html = (await call<string>(app, 'GET', page)).body
          for (const [, url] of html.matchAll(/\b(?:src|href)="([^"]+)"/g)) {
            const asset = await app.handle(new Request(`http://localhost${url}`))
            expect(asset.status).toBe(200)
            expect(asset.headers.get('content-type')).toMatch(/^text\/(javascript|css)/)
            expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(50)
          }
        }
      })

      test('the big bundles are gzipped for clients that accept it', async () => {
        const plain = await app.handle(
          new Request('http://localhost/docs/assets/redoc.standalone.js'),
        )
        const zipped = await app.handle(
          new Request('http://localhost/docs/assets/redoc.standalone.js', {
            headers: { 'accept-encoding': 'gzip, br' },
          }),
        )
        expect(zipped.headers.get('content-encoding')).toBe('gzip')
        const plainSize = (await plain.arrayBuffer()).byteLength
        const zippedSize = Number(
          zipped.headers.get('content-length') ?? (await zipped.arrayBuffer()).byteLength,
        )
        expect(zippedSize).toBeLessThan(plainSize / 2)
      })

      test('the served ReDoc bundle no longer loads its logo from a CDN', async () => {
        const bundle = await (
          await app.handle(new Request('http://localhost/docs/assets/redoc.standalone.js'))
        ).text()
        expect(bundle).toContain('Redoc')
        expect(bundle).not.toContain(REDOC_CDN_LOGO)
      })

      test('an unknown asset is a 404 error body', async () => {
        const reply = await call(app, 'GET', '/docs/assets/nothing.js')
        expect(reply.status).toBe(404)
        expect(reply.body).toEqual({ detail: expect.any(String), code: 'not_found' })
      })

      test('a variant app serves the docs too', async () => {
        const basic = variantDocsApp('basic')
        expect((await call(basic, 'GET', '/docs')).status).toBe(200)
        expect((await call(basic, 'GET', '/redoc')).status).toBe(200)
      })
    })
  })
