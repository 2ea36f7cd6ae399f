// The harness's load generator (bench/harness/load.ts): wrk sends exactly the
// scenario's request (method, headers and body, whatever bytes they hold, go
// through a generated Lua script) and the run reports its answers and the
// generator's own CPU, which the report needs to refuse a ratio.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { runLoad, WRK } from '../../bench/harness/load.ts'

const HEADER = `q"1uo\\te é 123 -]]`
const BODY = JSON.stringify({ text: 'line\nbreak "quoted" \\ back', n: 1 })

let server: ReturnType<typeof Bun.serve>
let wrong = 0

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const body = await request.text()
      const header = Buffer.from(request.headers.get('x-test') ?? '', 'latin1').toString('utf8')
      const ok = request.method === 'POST' && body === BODY && header === HEADER
      if (!ok) wrong++
      return new Response(ok ? 'ok' : 'wrong', { status: ok ? 200 : 400 })
    },
  })
})
afterAll(() => server.stop(true))

describe.skipIf(!WRK)('wrk load', () => {
  test('sends the scenario request as given and reports answers and generator CPU', async () => {
    const result = await runLoad(
      `http://127.0.0.1:${server.port}`,
      { method: 'POST', path: '/x?y=1', headers: { 'x-test': HEADER }, body: BODY },
      { connections: 2, durationSec: 1 },
    )
    expect(result.generator).toBe('wrk')
    expect(result.requests).toBeGreaterThan(0)
    expect(wrong).toBe(0)
    expect(result.non2xx).toBe(0)
    expect(result.errors).toBe(0)
    expect(result.rps).toBeGreaterThan(0)
    expect(result.latency.p99).toBeGreaterThanOrEqual(result.latency.p50)
    expect(result.generatorCores).toBeGreaterThan(0)
  })

  test('counts error statuses as wrong answers', async () => {
    const result = await runLoad(
      `http://127.0.0.1:${server.port}`,
      { method: 'GET', path: '/' },
      { connections: 1, durationSec: 1 },
    )
    expect(result.requests).toBeGreaterThan(0)
    expect(result.non2xx).toBe(result.requests)
  })
})
