// Measures the request scenarios one after another, each against the bare
// reference route answering the same number of bytes (bare.ts), in the same
// run and minute: at saturation (closed loop, wrk, alternating rounds) the
// server CPU per request of each is the headline, steady on a noisy machine;
// the ratio of their req/s stands beside it, and is refused when the load
// generator was above GENERATOR_MAX_CORES in any round (then it measured the
// generator, not the server). At a fixed offered rate (open loop,
// open-loop.ts) the latency is service time rather than the queue a saturated
// 2-core machine builds.
import type { BareServer } from './bare.ts'
import { processCpuSeconds } from './cpu.ts'
import { type LoadResult, type LoadSettings, type RequestSpec, runLoad } from './load.ts'
import { type OpenLoopResult, runOpenLoop } from './open-loop.ts'
import type { BenchOptions } from './options.ts'
import type { Prepared } from './prepare.ts'
import { type RequestScenario, requestScenarios } from './scenarios.ts'

export interface SaturatedRound {
  service: LoadResult
  bare: LoadResult
  /** Server process CPU (user + system) per request, µs; undefined without /proc. */
  serviceCpuUs: number | undefined
  bareCpuUs: number | undefined
  /** Server process CPU over the round's wall time (1 = a whole core): how server-bound it was. */
  serviceCores: number | undefined
  bareCores: number | undefined
}

/**
 * A load generator busier than this share of a core may be what limits the
 * req/s it measures: a req/s ratio from such a round is refused.
 */
export const GENERATOR_MAX_CORES = 0.7

export interface RequestResult {
  name: string
  title: string
  /** Size of the answer; the bare route answers as many bytes. */
  bytes: number
  /**
   * Rounds of bare route then service, one after the other; ratio = the
   * median of the rounds' service ÷ bare req/s, and service / bare are that round's.
   */
  saturation: {
    service: LoadResult
    bare: LoadResult
    ratio: number
    /** Why `ratio` is not to be trusted (the generator at N % of a core), or undefined. */
    refused: string | undefined
    /** Bare CPU per request ÷ the service's, median over rounds: steadier on a busy machine. */
    cpuRatio: number | undefined
    /** Median server CPU per request, µs, of the service and of the bare route. */
    serviceCpuUs: number | undefined
    bareCpuUs: number | undefined
    /** The load generator's busiest round, as a share of a core. */
    generatorCores: number | undefined
    rounds: SaturatedRound[]
  }
  /** Rate offered: --rate, or half the scenario's saturation req/s when that is lower. */
  openLoop: { service: OpenLoopResult; bare: OpenLoopResult }
  /** Wrong answers: non-2xx, errors, lost requests. */
  failures: string[]
}

const OPEN_LOOP_CONNECTIONS = 64
/** Saturated rounds per scenario: the median ratio resists a noisy neighbour's burst. */
const ROUNDS = 3

/** Where a load goes: a URL, the request, and the pid whose CPU it costs. */
interface Target {
  url: string
  spec: RequestSpec
  pid: number
}

/** One closed-loop run, with the CPU the target process spent per request and its share of a core. */
async function metered(target: Target, settings: LoadSettings) {
  const before = processCpuSeconds(target.pid)
  const started = performance.now()
  const load = await runLoad(target.url, target.spec, settings)
  const wallSec = (performance.now() - started) / 1000
  const after = processCpuSeconds(target.pid)
  const seconds = before === undefined || after === undefined ? undefined : after - before
  return {
    load,
    cpuUs:
      seconds === undefined || load.requests === 0 ? undefined : (seconds * 1e6) / load.requests,
    cores: seconds === undefined ? undefined : seconds / wallSec,
  }
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
const medianOf = (values: (number | undefined)[]) => {
  const known = values.filter((value): value is number => value !== undefined)
  return known.length > 0 ? median(known) : undefined
}

/** Warm-ups (discarded), then ROUNDS alternating runs of the bare route and the service. */
async function saturate(service: Target, bare: Target, options: BenchOptions) {
  const warmup: LoadSettings = { connections: options.connections, durationSec: options.warmupSec }
  await runLoad(bare.url, bare.spec, warmup)
  await runLoad(service.url, service.spec, warmup)
  const settings = { ...warmup, durationSec: Math.max(1, options.durationSec / ROUNDS) }
  const rounds: SaturatedRound[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const bareRun = await metered(bare, settings)
    const serviceRun = await metered(service, settings)
    rounds.push({
      service: serviceRun.load,
      bare: bareRun.load,
      serviceCpuUs: serviceRun.cpuUs,
      bareCpuUs: bareRun.cpuUs,
      serviceCores: serviceRun.cores,
      bareCores: bareRun.cores,
    })
  }
  const ratioOf = (round: SaturatedRound) =>
    round.bare.rps > 0 ? round.service.rps / round.bare.rps : 0
  const ratio = median(rounds.map(ratioOf))
  const middle = rounds.find((round) => ratioOf(round) === ratio) ?? (rounds[0] as SaturatedRound)
  const cpuRatios = rounds.flatMap((round) =>
    round.serviceCpuUs && round.bareCpuUs ? [round.bareCpuUs / round.serviceCpuUs] : [],
  )
  // Any round, not the median one: the rounds a busy generator limits are the
  // bare route's fastest, so leaving them out would flatter the service.
  const generators = rounds.flatMap((round) => [round.service, round.bare])
  const generatorCores = maxOf(generators.map((load) => load.generatorCores))
  const generator = generators[0]?.generator ?? 'the generator'
  return {
    service: middle.service,
    bare: middle.bare,
    ratio,
    refused:
      generatorCores === undefined
        ? `refused: ${generator}'s CPU is unknown`
        : generatorCores > GENERATOR_MAX_CORES
          ? `refused: ${generator} at ${Math.round(generatorCores * 100)} % of a core`
          : undefined,
    cpuRatio: cpuRatios.length > 0 ? median(cpuRatios) : undefined,
    serviceCpuUs: medianOf(rounds.map((round) => round.serviceCpuUs)),
    bareCpuUs: medianOf(rounds.map((round) => round.bareCpuUs)),
    generatorCores,
    rounds,
  }
}

function maxOf(values: (number | undefined)[]): number | undefined {
  if (values.some((value) => value === undefined)) return undefined
  return Math.max(...(values as number[]))
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

/** One request scenario on `server`, against the bare route answering as many bytes. */
export async function measureScenario(
  scenario: RequestScenario,
  server: { url: string; pid: number },
  bare: BareServer,
  options: BenchOptions,
  progress: (line: string) => void,
): Promise<RequestResult> {
  const baseUrl = server.url
  const bytes = Buffer.byteLength(await scenario.warm(baseUrl))
  const reference: RequestSpec = { method: 'GET', path: bare.pathFor(bytes) }
  const saturation = await saturate(
    { url: baseUrl, spec: scenario.spec, pid: server.pid },
    { url: bare.url, spec: reference, pid: bare.pid },
    options,
  )
  const { service, bare: bareLoad } = saturation
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
    saturation,
    openLoop: { service: serviceOpen, bare: bareOpen },
    failures: [
      ...loadFailures(scenario.name, service),
      ...loadFailures(`${scenario.name} (bare)`, bareLoad),
      ...openLoopFailures(scenario.name, serviceOpen),
      ...openLoopFailures(`${scenario.name} (bare)`, bareOpen),
    ],
  }
  const { serviceCpuUs, bareCpuUs, refused } = result.saturation
  const us = (value: number | undefined) => (value === undefined ? 'n/a' : value.toFixed(1))
  progress(
    `${scenario.name}: ${us(serviceCpuUs)} µs of server CPU a request (bare ${us(bareCpuUs)}); ` +
      `${service.rps.toFixed(0)} req/s = ${refused ?? `${result.saturation.ratio.toFixed(2)}× bare`} ` +
      `(${bareLoad.rps.toFixed(0)}); at ${rate} req/s offered p99 ${serviceOpen.latency.p99.toFixed(2)} ms ` +
      `(bare ${bareOpen.latency.p99.toFixed(2)} ms)${result.failures.length > 0 ? ': wrong answers' : ''}`,
  )
  return result
}

export async function measureRequests(
  server: { url: string; pid: number },
  bare: BareServer,
  prepared: Prepared,
  options: BenchOptions,
  progress: (line: string) => void,
): Promise<RequestResult[]> {
  const results: RequestResult[] = []
  for (const scenario of requestScenarios(prepared))
    results.push(await measureScenario(scenario, server, bare, options, progress))
  return results
}
