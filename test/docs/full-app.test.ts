// The real application of APP_VARIANT=full (src/app.ts createApp): /docs/json
// lists the conversation API mounted after the docs plugin as well as the
// document store, each POST with its JSON request body.
import { beforeAll, describe, expect, test } from 'bun:test'
import { call } from '../docstore/harness.ts'
import { appBackends } from '../support/backends.ts'
import { conversationApp, type TestApp } from '../support/conversation-app.ts'

interface OpenApiDocument {
  paths: Record<
    string,
    Record<
      string,
      { requestBody?: { content: Record<string, { schema?: { properties?: object } }> } }
    >
  >
}

for (const backend of appBackends())
  describe(backend.name, () => {
    let app: TestApp['app']
    // The first open of the shared test database can take several seconds (PGlite).
    beforeAll(async () => {
      app = (await conversationApp({ backend })).app
    }, 60_000)

    describe('the full app', () => {
      test('/docs/json lists the document store and the conversation API', async () => {
        const reply = await call<OpenApiDocument>(app, 'GET', '/docs/json')
        expect(reply.status).toBe(200)
        const paths = Object.keys(reply.body.paths)
        for (const path of ['/', '/health', '/documents', '/query', '/cache'])
          expect(paths).toContain(path)
        for (const path of [
          '/backend-api/f/conversation',
          '/backend-api/f/conversation/resume',
          '/backend-api/conversations',
          '/backend-api/conversation/{conversation_id}',
        ])
          expect(paths).toContain(path)
      })

      test('every POST documents its JSON body schema', async () => {
        const { body: doc } = await call<OpenApiDocument>(app, 'GET', '/docs/json')
        const posts = Object.entries(doc.paths).filter(([, methods]) => methods.post)
        expect(posts.length).toBeGreaterThanOrEqual(4)
        for (const [path, methods] of posts) {
          const schema = methods.post?.requestBody?.content['application/json']?.schema
          expect({ path, properties: Object.keys(schema?.properties ?? {}).length > 0 }).toEqual({
            path,
            properties: true,
          })
        }
      })

      test('the docs pages and the document store answer in the same app', async () => {
        expect((await call(app, 'GET', '/docs')).status).toBe(200)
        expect((await call(app, 'GET', '/redoc')).status).toBe(200)
        expect((await call(app, 'GET', '/')).body).toEqual({
          service: 'conduit',
          status: 'running',
        })
      })
    })
  })
