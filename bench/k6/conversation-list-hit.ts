// k6 scenario 2: GET /backend-api/conversations served from the cache. setup()
// gives one reader 20 conversations and reads the list once to warm it.
// Target: no error (the issue sets no latency figure for this one).
import { check } from 'k6'
import http from 'k6/http'
import type { Options } from 'k6/options'
import { BASE_URL, createConversation, DURATION, getOk, newRunId } from './lib/api.ts'

const CONVERSATIONS = 20

export const options: Options = {
  scenarios: {
    list_hit: { executor: 'constant-vus', vus: 10, duration: DURATION },
  },
  thresholds: {
    'http_req_failed{endpoint:list}': ['rate==0'],
    checks: ['rate==1'],
  },
}

interface Data {
  userId: string
}

export function setup(): Data {
  const userId = `${newRunId('k6')}-lister`
  for (let index = 0; index < CONVERSATIONS; index++)
    createConversation(userId, `Conversation ${index} for the list benchmark.`)
  getOk('/backend-api/conversations?limit=20', { 'x-user-id': userId })
  return { userId }
}

export default function (data: Data): void {
  const res = http.get(`${BASE_URL}/backend-api/conversations?limit=20`, {
    headers: { 'x-user-id': data.userId },
    tags: { endpoint: 'list' },
  })
  check(res, {
    'list: status 200': (r) => r.status === 200,
    'list: every conversation': (r) => r.status === 200 && r.json('total') === CONVERSATIONS,
  })
}
