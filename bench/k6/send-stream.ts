// k6 scenario 3: send one message and read the streamed reply (local model) to
// its end, in a loop. Reports time to first item, items per second and the
// share of complete streams (target: every stream complete, no error).
//
// k6's http module returns the body once the stream has ended, so the time to
// first item is the time to first byte (timings.waiting): the service sends
// its first items, the first append included, before any model delay. Items
// per second is the append items over the time the body took to arrive.
import { check } from 'k6'
import http from 'k6/http'
import { Counter, Rate, Trend } from 'k6/metrics'
import type { Options } from 'k6/options'
import {
  BASE_URL,
  DURATION,
  getOk,
  JSON_HEADERS,
  newRunId,
  parseStream,
  sendBody,
} from './lib/api.ts'

const timeToFirstItem = new Trend('time_to_first_item', true)
const itemsPerSecond = new Trend('items_per_second')
const completeStreams = new Rate('complete_streams')
const appendItems = new Counter('append_items')

export const options: Options = {
  scenarios: {
    send_stream: { executor: 'constant-vus', vus: 10, duration: DURATION, gracefulStop: '60s' },
  },
  thresholds: {
    complete_streams: ['rate==1'],
    'http_req_failed{endpoint:send}': ['rate==0'],
    checks: ['rate==1'],
  },
}

interface Data {
  runId: string
}

export function setup(): Data {
  getOk('/health')
  return { runId: newRunId('k6-send') }
}

export default function (data: Data): void {
  const res = http.post(
    `${BASE_URL}/backend-api/f/conversation`,
    sendBody(`${data.runId}-vu${__VU}`, `Turn ${__ITER}: tell me something short.`),
    { headers: JSON_HEADERS, tags: { endpoint: 'send' }, timeout: '60s' },
  )
  const facts = parseStream(typeof res.body === 'string' ? res.body : '')
  timeToFirstItem.add(res.timings.waiting)
  if (res.timings.receiving > 0)
    itemsPerSecond.add(facts.appendItems / (res.timings.receiving / 1000))
  appendItems.add(facts.appendItems)
  completeStreams.add(res.status === 200 && facts.done)
  check(res, {
    'send: status 200': (r) => r.status === 200,
    'send: event stream': (r) =>
      String(r.headers['Content-Type']).indexOf('text/event-stream') === 0,
    'send: ends with [DONE]': () => facts.done,
  })
}
