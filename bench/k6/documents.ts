// k6 scenario 4: the document store. GET /documents served from its 60-second
// cache (warmed in setup) and POST /query over the run's documents, side by
// side. Target: no error, and every list read a cache hit.
import { check, fail } from 'k6'
import http from 'k6/http'
import type { Options } from 'k6/options'
import { BASE_URL, DURATION, getOk, JSON_HEADERS, newRunId } from './lib/api.ts'

const DOCUMENTS = 10

export const options: Options = {
  scenarios: {
    // Shorter than the list's 60-second cache expiry, so every read is a hit.
    documents_list: { executor: 'constant-vus', vus: 5, duration: DURATION, exec: 'listDocuments' },
    documents_query: {
      executor: 'constant-vus',
      vus: 5,
      duration: DURATION,
      exec: 'queryDocuments',
    },
  },
  thresholds: {
    'http_req_failed{endpoint:documents}': ['rate==0'],
    'http_req_failed{endpoint:query}': ['rate==0'],
    checks: ['rate==1'],
  },
}

interface Data {
  question: string
}

export function setup(): Data {
  const question = newRunId('k6-docs')
  for (let index = 0; index < DOCUMENTS; index++) {
    const res = http.post(
      `${BASE_URL}/documents`,
      JSON.stringify({
        content: `Benchmark ${question} document ${index}: a cached list and a literal query.`,
        metadata: { source: 'k6', index },
      }),
      { headers: JSON_HEADERS },
    )
    if (res.status !== 200) fail(`setup: POST /documents answered HTTP ${res.status}`)
  }
  getOk('/documents')
  return { question }
}

export function listDocuments(): void {
  const res = http.get(`${BASE_URL}/documents`, { tags: { endpoint: 'documents' } })
  check(res, {
    'documents: status 200': (r) => r.status === 200,
    'documents: cache hit': (r) => r.status === 200 && r.json('cached') === true,
  })
}

export function queryDocuments(data: Data): void {
  const res = http.post(
    `${BASE_URL}/query`,
    JSON.stringify({ question: data.question, top_k: 5 }),
    {
      headers: JSON_HEADERS,
      tags: { endpoint: 'query' },
    },
  )
  check(res, {
    'query: status 200': (r) => r.status === 200,
    'query: top_k results': (r) =>
      r.status === 200 && (r.json('results') as unknown[]).length === 5,
  })
}
