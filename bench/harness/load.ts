// Drives one request scenario with autocannon (closed loop, fixed connections,
// fixed duration) and records every response's latency itself: autocannon's
// own percentiles are whole milliseconds, too coarse for a 5 ms target.
import autocannon from 'autocannon'
import { Samples, type Summary } from './stats.ts'

export interface RequestSpec {
  method: 'GET' | 'POST'
  path: string
  headers?: Record<string, string>
  body?: string
}

export interface LoadSettings {
  connections: number
  durationSec: number
}

export interface LoadResult {
  requests: number
  durationSec: number
  rps: number
  latency: Summary
  non2xx: number
  /** Connection errors and timeouts. */
  errors: number
}

export function runLoad(
  baseUrl: string,
  spec: RequestSpec,
  settings: LoadSettings,
): Promise<LoadResult> {
  const latencies = new Samples()
  let non2xx = 0
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${baseUrl}${spec.path}`,
        method: spec.method,
        headers: spec.headers,
        body: spec.body,
        connections: settings.connections,
        duration: settings.durationSec,
        timeout: 10,
      },
      (error, result) => {
        if (error) return reject(error)
        const durationSec = (performance.now() - started) / 1000
        resolve({
          requests: latencies.count,
          durationSec,
          rps: latencies.count / durationSec,
          latency: latencies.summary(),
          non2xx,
          errors: result.errors,
        })
      },
    )
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      latencies.add(responseTime)
      if (statusCode < 200 || statusCode > 299) non2xx++
    })
  })
}
