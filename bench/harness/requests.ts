// Measures the request scenarios one after another, each paired with a GET
// /health measured just before it under the same settings: the ratio of the
// two is what stays comparable from one (noisy) machine or minute to the next.
import { type LoadResult, type LoadSettings, type RequestSpec, runLoad } from './load.ts'
import type { BenchOptions } from './options.ts'
import type { Prepared } from './prepare.ts'
import { HEALTH, requestScenarios } from './scenarios.ts'
import { describeTarget, requestFailures } from './targets.ts'

export interface RequestResult {
  name: string
  title: string
  target: string
  load: LoadResult
  /** GET /health, measured right before this scenario. */
  health: LoadResult
  failures: string[]
}

/** A warm-up run (discarded), then the measured run. */
async function measure(
  baseUrl: string,
  spec: RequestSpec,
  options: BenchOptions,
): Promise<LoadResult> {
  const settings: LoadSettings = {
    connections: options.connections,
    durationSec: options.warmupSec,
  }
  await runLoad(baseUrl, spec, settings)
  return runLoad(baseUrl, spec, { ...settings, durationSec: options.durationSec })
}

export async function measureRequests(
  baseUrl: string,
  prepared: Prepared,
  options: BenchOptions,
  progress: (line: string) => void,
): Promise<RequestResult[]> {
  const results: RequestResult[] = []
  for (const scenario of requestScenarios(prepared)) {
    await scenario.warm(baseUrl)
    const health = await measure(baseUrl, HEALTH, options)
    const load = await measure(baseUrl, scenario.spec, options)
    const failures = [
      ...requestFailures(scenario.name, scenario.target, load),
      ...requestFailures(`${scenario.name} (paired /health)`, {}, health),
    ]
    results.push({
      name: scenario.name,
      title: scenario.title,
      target: describeTarget(scenario.target),
      load,
      health,
      failures,
    })
    progress(
      `${scenario.name}: ${load.rps.toFixed(0)} req/s, p95 ${load.latency.p95.toFixed(2)} ms, ` +
        `p99 ${load.latency.p99.toFixed(2)} ms (health ${health.rps.toFixed(0)} req/s, ` +
        `p99 ${health.latency.p99.toFixed(2)} ms)${failures.length > 0 ? ': target missed' : ''}`,
    )
  }
  return results
}
