// Measures the request scenarios one after another, each against the bare
// reference route answering the same number of bytes (bare.ts), in the same
// run and minute: at saturation (closed loop, autocannon) the ratio of their
// req/s is what stays comparable from one noisy machine or minute to the next;
// at a fixed offered rate (open loop, open-loop.ts) the latency is service
// time rather than the queue a saturated 2-core machine builds.
import type { BareServer } from './bare.ts'
import { type LoadResult, type LoadSettings, type RequestSpec, runLoad } from './load.ts'
import { type OpenLoopResult, runOpenLoop } from './open-loop.ts'
import type { BenchOptions } from './options.ts'
import type { Prepared } from './prepare.ts'
import { requestScenarios } from './scenarios.ts'

export interface RequestResult {
  name: string
  title: string
  /** Size of the answer; the bare route answers as many bytes. */
  bytes: number
  saturation: { service: LoadResult; bare: LoadResult; ratio: number }
  /** Rate offered: --rate, or half the scenario's saturation req/s when that is lower. */
  openLoop: { service: OpenLoopResult; bare: OpenLoopResult }
  /** Wrong answers: non-2xx, errors, lost requests. */
  failures: string[]
}

const OPEN_LOOP_CONNECTIONS = 32

/** A warm-up run (discarded), then the measured run. */
async function saturate(baseUrl: string, spec: RequestSpec, options: BenchOptions) {
  const settings: LoadSettings = {
    connections: options.connections,
    durationSec: options.warmupSec,
  }
  await runLoad(baseUrl, spec, settings)
  return runLoad(baseUrl, spec, { ...settings, durationSec: options.durationSec })
}

function loadFailures(name: string, load: LoadResult): string[] {
  const failures: string[] = []
  if (load.requests === 0) failures.push(`${name}: no response at all`)
  if (load.non2xx > 0) failures.push(`${name}: ${load.non2xx} non-2xx responses`)
  if (load.errors > 0) failures.push(`${name}: ${load.errors} connection errors or timeouts`)
  return failures
}

function openLoopFailures(name: string, result: OpenLoopResult): string[] {
  const failures: string[] = []
  if (result.non2xx > 0) failures.push(`${name} (open loop): ${result.non2xx} non-2xx responses`)
  if (result.errors > 0) failures.push(`${name} (open loop): ${result.errors} requests unanswered`)
  return failures
}

export async function measureRequests(
  baseUrl: string,
  bare: BareServer,
  prepared: Prepared,
  options: BenchOptions,
  progress: (line: string) => void,
): Promise<RequestResult[]> {
  const results: RequestResult[] = []
  for (const scenario of requestScenarios(prepared)) {
    const bytes = Buffer.byteLength(await scenario.warm(baseUrl))
    const reference: RequestSpec = { method: 'GET', path: bare.pathFor(bytes) }
    const bareLoad = await saturate(bare.url, reference, options)
    const service = await saturate(baseUrl, scenario.spec, options)
    const rate = Math.max(100, Math.min(options.ratePerSec, Math.floor(service.rps / 2)))
    const openLoop = {
      ratePerSec: rate,
      durationSec: options.openLoopSec,
      connections: OPEN_LOOP_CONNECTIONS,
    }
    const bareOpen = await runOpenLoop(bare.url, reference, openLoop)
    const serviceOpen = await runOpenLoop(baseUrl, scenario.spec, openLoop)
    const result: RequestResult = {
      name: scenario.name,
      title: scenario.title,
      bytes,
      saturation: {
        service,
        bare: bareLoad,
        ratio: bareLoad.rps > 0 ? service.rps / bareLoad.rps : 0,
      },
      openLoop: { service: serviceOpen, bare: bareOpen },
      failures: [
        ...loadFailures(scenario.name, service),
        ...loadFailures(`${scenario.name} (bare)`, bareLoad),
        ...openLoopFailures(scenario.name, serviceOpen),
        ...openLoopFailures(`${scenario.name} (bare)`, bareOpen),
      ],
    }
    results.push(result)
    progress(
      `${scenario.name}: ${service.rps.toFixed(0)} req/s = ${result.saturation.ratio.toFixed(2)}× bare ` +
        `(${bareLoad.rps.toFixed(0)}); at ${rate} req/s offered p99 ${serviceOpen.latency.p99.toFixed(2)} ms ` +
        `(bare ${bareOpen.latency.p99.toFixed(2)} ms)${result.failures.length > 0 ? ': wrong answers' : ''}`,
    )
  }
  return results
}
