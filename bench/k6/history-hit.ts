// k6 scenario 1: GET /backend-api/conversation/{id} served from the cache (one
// warming read in setup). Target: p95 < 5 ms, p99 < 10 ms, no error.
import { check } from 'k6'
import http from 'k6/http'
import type { Options } from 'k6/options'
import { BASE_URL, createConversation, DURATION, getOk, newRunId } from './lib/api.ts'

export const options: Options = {
  scenarios: {
    history_hit: { executor: 'constant-vus', vus: 10, duration: DURATION },
  },
  thresholds: {
    // Only the measured reads carry this tag; setup()'s requests do not count.
    'http_req_duration{endpoint:history}': ['p(95)<5', 'p(99)<10'],
    'http_req_failed{endpoint:history}': ['rate==0'],
    checks: ['rate==1'],
  },
}

interface Data {
  userId: string
  conversationId: string
}

export function setup(): Data {
  const userId = `${newRunId('k6')}-reader`
  const conversationId = createConversation(userId, 'How fast is a cached history read?')
  getOk(`/backend-api/conversation/${conversationId}`, { 'x-user-id': userId })
  return { userId, conversationId }
}

export default function (data: Data): void {
  const res = http.get(`${BASE_URL}/backend-api/conversation/${data.conversationId}`, {
    headers: { 'x-user-id': data.userId },
    tags: { endpoint: 'history' },
  })
  check(res, {
    'history: status 200': (r) => r.status === 200,
    'history: holds the conversation': (r) =>
      typeof r.body === 'string' && r.body.indexOf(data.conversationId) !== -1,
  })
}
