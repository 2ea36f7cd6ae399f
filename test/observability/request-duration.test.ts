// The request-duration histogram takes its observations through per-series
// recorders and hands them to prom-client in batches (metrics.ts): /metrics
// must read exactly as if every value had been observed directly, before and
// after a batch is handed over.
import { describe, expect, test } from 'bun:test'
import { Histogram, Registry } from 'prom-client'
import { createMetrics, PENDING_OBSERVATIONS } from '../../src/observability/metrics.ts'

/** The same values observed directly into a plain prom-client histogram of the same shape. */
async function directly(observations: [Record<string, string>, number][]): Promise<string> {
  const registry = new Registry()
  const histogram = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from a request to its response (for a stream: to its headers), by route and status.',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  })
  for (const [labels, value] of observations) histogram.observe(labels, value)
  return registry.metrics()
}

const histogramLines = (text: string) =>
  text.split('\n').filter((line) => line.startsWith('http_request_duration_seconds'))

describe('request duration histogram', () => {
  test('reads as direct observes, below and past a batch, over several series', async () => {
    const metrics = createMetrics({ processMetrics: false })
    const hit = { method: 'GET', route: '/backend-api/conversations', status: '200' }
    const missing = { method: 'GET', route: '(unmatched)', status: '404' }
    const recordHit = metrics.requestDuration.series(hit)
    const recordMissing = metrics.requestDuration.series(missing)
    const observations: [Record<string, string>, number][] = []
    const record = (count: number) => {
      for (let index = 0; index < count; index++) {
        const seconds = ((index * 7919) % 1000) / 997
        if (index % 5 === 0) {
          recordMissing(seconds)
          observations.push([missing, seconds])
        } else {
          recordHit(seconds)
          observations.push([hit, seconds])
        }
      }
    }
    record(10)
    const few = histogramLines(await metrics.registry.metrics())
    expect(few).toEqual(histogramLines(await directly(observations)))
    expect(few).toContain(
      'http_request_duration_seconds_count{method="GET",route="/backend-api/conversations",status="200"} 8',
    )
    record(PENDING_OBSERVATIONS * 2 + 3)
    const many = histogramLines(await metrics.registry.metrics())
    expect(many).toEqual(histogramLines(await directly(observations)))
  })
})
