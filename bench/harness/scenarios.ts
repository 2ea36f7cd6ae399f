// The request scenarios (the k6 scripts' counterparts). Each one is warmed by
// a read before it is measured, so it measures the cache hit; the warming read
// also gives the size of the answer, which the bare reference route (bare.ts)
// then answers with, so the ratio of the two is what the service adds.
import type { RequestSpec } from './load.ts'
import type { Prepared } from './prepare.ts'

export interface RequestScenario {
  name: string
  title: string
  spec: RequestSpec
  /** Does the warming read; throws when the answer is wrong or not a cache hit. Resolves with the answer. */
  warm(baseUrl: string): Promise<string>
}

async function read(baseUrl: string, spec: RequestSpec): Promise<string> {
  const response = await fetch(`${baseUrl}${spec.path}`, {
    method: spec.method,
    headers: spec.headers,
    body: spec.body,
    signal: AbortSignal.timeout(10_000),
  })
  const body = await response.text()
  if (response.status !== 200)
    throw new Error(`${spec.method} ${spec.path}: HTTP ${response.status} ${body.slice(0, 200)}`)
  return body
}

function simple(name: string, title: string, spec: RequestSpec): RequestScenario {
  return { name, title, spec, warm: (baseUrl) => read(baseUrl, spec) }
}

export function requestScenarios(prepared: Prepared): RequestScenario[] {
  const asReader = { 'x-user-id': prepared.reader }
  const documents: RequestSpec = { method: 'GET', path: '/documents' }
  return [
    simple('history-hit', 'GET /backend-api/conversation/{id}, cache hit', {
      method: 'GET',
      path: `/backend-api/conversation/${prepared.historyId}`,
      headers: asReader,
    }),
    simple('list-hit', 'GET /backend-api/conversations, cache hit', {
      method: 'GET',
      path: '/backend-api/conversations?limit=20',
      headers: asReader,
    }),
    {
      name: 'documents-hit',
      title: 'GET /documents, cache hit',
      spec: documents,
      async warm(baseUrl) {
        await read(baseUrl, documents)
        // The API says whether the list came from the cache: make sure it did.
        const body = await read(baseUrl, documents)
        if (!body.includes('"cached":true'))
          throw new Error('GET /documents is not served from the cache after a warming read')
        return body
      },
    },
    simple('query', 'POST /query', {
      method: 'POST',
      path: '/query',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ question: prepared.question, top_k: 5 }),
    }),
    // It queries both stores (no cache): what the old harness compared everything with.
    simple('health', 'GET /health', { method: 'GET', path: '/health' }),
  ]
}
