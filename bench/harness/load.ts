// Drives one request scenario in a closed loop (fixed connections, fixed
// duration) and reports what the load generator itself cost: a ratio of two
// servers' req/s only means something while the generator is not the
// bottleneck. wrk (Debian's package; one thread, its own process) is used when
// installed: it drives a bare route at 1.5-2x what autocannon reaches from
// inside the harness's Bun process. Without wrk, autocannon runs in this
// process, and its CPU is this process's; the report then usually refuses the
// ratio (requests.ts, GENERATOR_MAX_CORES).
import { unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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
  /** Answers with a status of 400 or more (wrk) or outside 2xx (autocannon). */
  non2xx: number
  /** Connection errors and timeouts. */
  errors: number
  /** `wrk` or `autocannon`. */
  generator: string
  /** The generator's CPU over the run's wall time: 1 = one core busy throughout; undefined if unknown. */
  generatorCores: number | undefined
}

/** wrk's path, or undefined: then autocannon. BENCH_GENERATOR=autocannon forces it. */
export const WRK =
  process.env.BENCH_GENERATOR === 'autocannon' ? undefined : (Bun.which('wrk') ?? undefined)

/** A Lua string literal of `text`: every byte outside [A-Za-z0-9 ] as a three-digit decimal escape. */
function luaString(text: string): string {
  let out = '"'
  for (const byte of new TextEncoder().encode(text))
    out += /[A-Za-z0-9 ]/.test(String.fromCharCode(byte))
      ? String.fromCharCode(byte)
      : `\\${String(byte).padStart(3, '0')}`
  return `${out}"`
}

/** The request, and a `done` that prints the run's figures as one JSON line (latencies in µs). */
function wrkScript(spec: RequestSpec): string {
  const lines = [`wrk.method = ${luaString(spec.method)}`]
  if (spec.body !== undefined) lines.push(`wrk.body = ${luaString(spec.body)}`)
  for (const [name, value] of Object.entries(spec.headers ?? {}))
    lines.push(`wrk.headers[${luaString(name)}] = ${luaString(value)}`)
  lines.push(
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format(\'{"requests":%d,"durationUs":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"mean":%.3f,"p50":%d,"p95":%d,"p99":%d,"max":%d}\\n\',',
    '    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,',
    '    latency.mean, latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max))',
    'end',
  )
  return `${lines.join('\n')}\n`
}

interface WrkFigures {
  requests: number
  durationUs: number
  connect: number
  read: number
  write: number
  status: number
  timeout: number
  mean: number
  p50: number
  p95: number
  p99: number
  max: number
}

async function runWrk(
  wrk: string,
  baseUrl: string,
  spec: RequestSpec,
  settings: LoadSettings,
): Promise<LoadResult> {
  const script = join(tmpdir(), `conduit-bench-${process.pid}-${Date.now()}-${Math.random()}.lua`)
  writeFileSync(script, wrkScript(spec))
  try {
    const child = Bun.spawn(
      [
        wrk,
        '-t1',
        `-c${settings.connections}`,
        `-d${Math.max(1, Math.round(settings.durationSec))}s`,
        '--timeout',
        '10s',
        '-s',
        script,
        `${baseUrl}${spec.path}`,
      ],
      { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
    )
    const started = performance.now()
    const [out, err, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ])
    const wallSec = (performance.now() - started) / 1000
    const line = out.split('\n').find((text) => text.startsWith('{"requests"'))
    if (code !== 0 || line === undefined)
      throw new Error(`wrk exited with ${code}: ${`${out}${err}`.trim().slice(-500)}`)
    const figures = JSON.parse(line) as WrkFigures
    const usage = child.resourceUsage()
    const durationSec = figures.durationUs / 1e6
    const ms = (us: number) => us / 1000
    return {
      requests: figures.requests,
      durationSec,
      rps: durationSec > 0 ? figures.requests / durationSec : 0,
      latency: {
        count: figures.requests,
        mean: ms(figures.mean),
        p50: ms(figures.p50),
        p95: ms(figures.p95),
        p99: ms(figures.p99),
        max: ms(figures.max),
      },
      non2xx: figures.status,
      errors: figures.connect + figures.read + figures.write + figures.timeout,
      generator: 'wrk',
      generatorCores:
        usage && wallSec > 0 ? Number(usage.cpuTime.total) / 1e6 / wallSec : undefined,
    }
  } finally {
    unlinkSync(script)
  }
}

/** autocannon in this process, recording every response's latency (its own percentiles are whole ms). */
function runAutocannon(
  baseUrl: string,
  spec: RequestSpec,
  settings: LoadSettings,
): Promise<LoadResult> {
  const latencies = new Samples()
  let non2xx = 0
  const started = performance.now()
  const cpuBefore = process.cpuUsage()
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
        const cpu = process.cpuUsage(cpuBefore)
        resolve({
          requests: latencies.count,
          durationSec,
          rps: latencies.count / durationSec,
          latency: latencies.summary(),
          non2xx,
          errors: result.errors,
          generator: 'autocannon',
          generatorCores: (cpu.user + cpu.system) / 1e6 / durationSec,
        })
      },
    )
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      latencies.add(responseTime)
      if (statusCode < 200 || statusCode > 299) non2xx++
    })
  })
}

export function runLoad(
  baseUrl: string,
  spec: RequestSpec,
  settings: LoadSettings,
): Promise<LoadResult> {
  return WRK ? runWrk(WRK, baseUrl, spec, settings) : runAutocannon(baseUrl, spec, settings)
}
