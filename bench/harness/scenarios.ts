// The request scenarios (the k6 scripts' counterparts) and their targets. Each
// one is warmed by a read before it is measured, so it measures the cache hit,
// and is paired with a GET /health measured right before it, the reference
// that makes figures from a noisy machine comparable.
import type { RequestSpec } from './load.ts'
import type { Prepared } from './prepare.ts'

export interface Target {
  /** Highest acceptable p95 latency, in ms. */
  p95Ms?: number
  /** Highest acceptable p99 latency, in ms. */
  p99Ms?: number
}

export interface RequestScenario {
  name: string
  title: string
  spec: RequestSpec
  /** Every scenario also requires 0 non-2xx answers and 0 errors. */
  target: Target
  /** Does the warming read; throws when the answer is wrong or not a cache hit. */
  warm(baseUrl: string): Promise<void>
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

function simple(
  name: string,
  title: string,
  spec: RequestSpec,
  target: Target = {},
): RequestScenario {
  return { name, title, spec, target, warm: async (baseUrl) => void (await read(baseUrl, spec)) }
}

/** The reference each scenario is compared with. */
export const HEALTH: RequestSpec = { method: 'GET', path: '/health' }

export function requestScenarios(prepared: Prepared): RequestScenario[] {
  const asReader = { 'x-user-id': prepared.reader }
  const documents: RequestSpec = { method: 'GET', path: '/documents' }
  return [
    simple(
      'history-hit',
      'GET /backend-api/conversation/{id}, cache hit',
      { method: 'GET', path: `/backend-api/conversation/${prepared.historyId}`, headers: asReader },
      { p95Ms: 5, p99Ms: 10 },
    ),
    simple('list-hit', 'GET /backend-api/conversations, cache hit', {
      method: 'GET',
      path: '/backend-api/conversations?limit=20',
      headers: asReader,
    }),
    {
      name: 'documents-hit',
      title: 'GET /documents, cache hit',
      spec: documents,
      target: {},
      async warm(baseUrl) {
        await read(baseUrl, documents)
        // The API says whether the list came from the cache: make sure it did.
        if (!(await read(baseUrl, documents)).includes('"cached":true'))
          throw new Error('GET /documents is not served from the cache after a warming read')
      },
    },
    simple('query', 'POST /query', {
      method: 'POST',
      path: '/query',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ question: prepared.question, top_k: 5 }),
    }),
  ]
}
