// The real application of APP_VARIANT=full (src/app.ts createApp): /docs/json
// lists the conversation API mounted after the docs plugin as well as the
// document store, each POST with its JSON request body.
import { beforeAll, describe, expect, test } from 'bun:test'
import { call } from '../docstore/harness.ts'
import { appBackends } from '../support/backends.ts'
import { conversationApp, type TestApp } from '../support/conversation-app.ts'

interface Operation {
  requestBody?: {
    content: Record<string, { schema?: { properties?: object; items?: { type?: string } } }>
  }
  parameters?: { name: string; in: string; required: boolean }[]
  security?: Record<string, string[]>[]
  responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>
}
interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>
  components: { securitySchemes?: Record<string, { type: string; scheme?: string }> }
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
          '/backend-api/conversations/search',
          '/backend-api/conversation/message_feedback',
          '/backend-api/models',
          '/backend-api/f/conversation/prepare',
          '/backend-api/sentinel/chat-requirements',
          '/backend-api/sentinel/chat-requirements/prepare',
          '/backend-api/sentinel/chat-requirements/finalize',
          '/backend-api/conversations/export',
          '/backend-api/conversations/import',
        ])
          expect(paths).toContain(path)
      })

      test('every POST documents its JSON body schema', async () => {
        const { body: doc } = await call<OpenApiDocument>(app, 'GET', '/docs/json')
        const posts = Object.entries(doc.paths).filter(([, methods]) => methods.post)
        expect(posts.length).toBeGreaterThanOrEqual(4)
        for (const [path, methods] of posts) {
          const schema = methods.post?.requestBody?.content['application/json']?.schema
          // An object's fields, or (an import's conversations.json) an array of objects.
          const described =
            Object.keys(schema?.properties ?? {}).length > 0 || schema?.items?.type === 'object'
          expect({ path, described }).toEqual({ path, described: true })
        }
        const importBody = doc.paths['/backend-api/conversations/import']?.post?.requestBody
        expect(Object.keys(importBody?.content ?? {}).sort()).toEqual([
          'application/json',
          'application/zip',
        ])
      })

      test('the management routes and the model list are documented with their schemas', async () => {
        const { body: doc } = await call<OpenApiDocument>(app, 'GET', '/docs/json')
        const bodyFields = (op: Operation | undefined) =>
          Object.keys(op?.requestBody?.content['application/json']?.schema?.properties ?? {}).sort()
        const patchOne = doc.paths['/backend-api/conversation/{conversation_id}']?.patch
        expect(bodyFields(patchOne)).toEqual(['is_archived', 'is_visible', 'title', 'user_id'])
        expect(bodyFields(doc.paths['/backend-api/conversations']?.patch)).toEqual([
          'is_archived',
          'is_visible',
          'user_id',
        ])
        expect(bodyFields(doc.paths['/backend-api/conversation/message_feedback']?.post)).toEqual([
          'conversation_id',
          'message_id',
          'rating',
          'text',
          'user_id',
        ])
        const search = doc.paths['/backend-api/conversations/search']?.get
        expect(search?.parameters).toEqual(
          expect.arrayContaining([
            expect.objectContaining({ name: 'query', in: 'query', required: true }),
            expect.objectContaining({ name: 'limit', in: 'query', required: false }),
          ]),
        )
        const list = doc.paths['/backend-api/conversations']?.get
        expect(list?.parameters?.map((p) => p.name)).toContain('is_archived')
        for (const op of [patchOne, search, doc.paths['/backend-api/models']?.get]) {
          expect(op?.responses?.['200']?.content?.['application/json']?.schema).toBeDefined()
          expect(op?.responses?.['401']).toBeDefined()
        }
        expect(JSON.stringify(doc.paths['/backend-api/models']?.get?.responses?.['200'])).toContain(
          'max_tokens',
        )
      })

      test('every /backend-api route declares X-User-Id and the bearer scheme (but the shared link, which needs no identity); resume its token header', async () => {
        const { body: doc } = await call<OpenApiDocument>(app, 'GET', '/docs/json')
        expect(doc.components.securitySchemes?.bearerAuth).toEqual({
          type: 'http',
          scheme: 'bearer',
        })
        const PUBLIC = 'get /backend-api/share/{share_id}'
        expect(doc.paths['/backend-api/share/{share_id}']?.get).toBeDefined()
        const operations = Object.entries(doc.paths)
          .filter(([path]) => path.startsWith('/backend-api/'))
          .flatMap(([path, methods]) =>
            Object.entries(methods).map(([method, op]) => ({ route: `${method} ${path}`, op })),
          )
          .filter(({ route, op }) => {
            if (route !== PUBLIC) return true
            expect(op.security).toBeUndefined()
            return false
          })
        expect(operations.length).toBeGreaterThanOrEqual(11)
        for (const { route, op } of operations) {
          const headers = (op.parameters ?? []).filter((p) => p.in === 'header').map((p) => p.name)
          expect({ route, userHeader: headers.includes('x-user-id') }).toEqual({
            route,
            userHeader: true,
          })
          expect({ route, security: op.security }).toEqual({
            route,
            security: [{ bearerAuth: [] }, {}],
          })
        }
        const resume = doc.paths['/backend-api/f/conversation/resume']?.post
        expect(resume?.parameters?.map((p) => `${p.in} ${p.name}`)).toContain(
          'header x-conduit-token',
        )
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
