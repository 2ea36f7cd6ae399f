// `bun run bench`: starts the service on 127.0.0.1 (real Postgres and Redis
// when DATABASE_URL / REDIS_URL are set, embedded otherwise) and a bare
// reference route beside it, prepares data through the API, measures every
// scenario against its reference (the bare route; for sends, pgbench and a
// bare Bun + postgres.js server running the same statements), writes
// bench/results/ under the date and commit, prints the targets met / missed,
// and exits non-zero on wrong answers. Bounded by --max-seconds.
// The server runs the default configuration's plugins (access log at info,
// metrics, CORS for any origin, both rate limits counting, set too high to
// refuse): what a default deployment pays a request.
// `--scale` runs only the streaming scenarios, at thousands of streams, on one
// and two instances (scale.ts).
import { loadavg } from 'node:os'
import { type Backend, backendFromEnv } from './backend.ts'
import { startBare } from './bare.ts'
import { compareWithBareSse } from './bare-sse-comparison.ts'
import { runManyStreamsOnBareSse } from './bare-sse-streams.ts'
import { describeMachine } from './machine.ts'
import { type BenchOptions, parseOptions } from './options.ts'
import { prepareData } from './prepare.ts'
import { type BenchReport, toMarkdown, writeReport } from './report.ts'
import { measureRequests } from './requests.ts'
import { commitLabel } from './result-name.ts'
import { runScale } from './scale.ts'
import { type ScaleReport, toScaleMarkdown, writeScaleReport } from './scale-report.ts'
import { measureSends, sendRatios } from './sends.ts'
import { startServer } from './server.ts'
import { runManyStreams } from './streaming.ts'
import {
  manyStreamsFailures,
  scaleFailures,
  scaleTargetChecks,
  sendStreamFailures,
  targetChecks,
} from './targets.ts'

const started = performance.now()
const say = (message: string) =>
  console.error(`bench [${((performance.now() - started) / 1000).toFixed(1)} s]: ${message}`)

/** Request scenarios against the bare route, and send + stream against the stack reference and pgbench, without model delay. */
async function measureOneServer(options: BenchOptions, backend: Backend) {
  say(`starting the server (${backend.label}) and the bare reference route`)
  const server = await startServer({ backend, chunkDelayMs: 0 })
  const bare = await startBare()
  try {
    say('preparing data through the API')
    const prepared = await prepareData(server.url)
    const requests = await measureRequests(server, bare, prepared, options, say)
    await bare.stop()
    say('send + stream')
    const sends = await measureSends(server, prepared.runId, backend, options, say)
    return { requests, sends, runId: prepared.runId }
  } finally {
    await bare.stop()
    await server.stop()
  }
}

/** --scale: the streaming scenarios only, on each instance count. */
async function scaleRun(options: BenchOptions, backend: Backend): Promise<number> {
  const startedAt = new Date().toISOString()
  const machine = describeMachine()
  const steps = await runScale(backend, options, say)
  const report: ScaleReport = {
    startedAt,
    backend: backend.label,
    machine,
    options,
    steps,
    targets: steps.flatMap(scaleTargetChecks),
    failures: steps.flatMap(scaleFailures),
  }
  const paths = writeScaleReport(report)
  console.log(toScaleMarkdown(report))
  say(`wrote ${paths.json} and ${paths.markdown}`)
  return report.failures.length === 0 ? 0 : 1
}

async function main(): Promise<number> {
  const options = parseOptions(Bun.argv.slice(2))
  const backend = backendFromEnv(process.env)
  const watchdog = setTimeout(() => {
    say(`the run took longer than ${options.maxSeconds} s; stopping it`)
    process.exit(2)
  }, options.maxSeconds * 1000)
  if (options.scale) {
    const code = await scaleRun(options, backend)
    clearTimeout(watchdog)
    return code
  }
  const startedAt = new Date().toISOString()
  const commit = commitLabel()
  const machine = describeMachine()
  const { requests, sends, runId } = await measureOneServer(options, backend)
  const { sendStream, reference: sendReference, pgbench, pgbenchSkipped } = sends
  say(`many streams: ${options.streamClients} clients`)
  const manyStreamsSettings = {
    clients: options.streamClients,
    rampMs: options.streamRampMs,
    chunkDelayMs: options.chunkDelayMs,
    runId,
    clientProcesses: options.clientProcesses,
    words: options.streamWords,
  }
  const manyStreams = await runManyStreams(backend, manyStreamsSettings)
  say(`many streams on the bare SSE reference: the same ${options.streamClients} clients`)
  const bareSse = await runManyStreamsOnBareSse({ ...manyStreamsSettings, runId: `${runId}-bare` })
  const versusBareSse = compareWithBareSse(manyStreams, bareSse)
  clearTimeout(watchdog)
  const report: BenchReport = {
    startedAt,
    commit,
    backend: backend.label,
    machine,
    loadAverageAtEnd: loadavg()[0] ?? 0,
    options,
    requests,
    sendStream,
    sendReference,
    pgbench,
    pgbenchSkipped,
    sendRounds: sends.rounds,
    redisCommandsPerTurn: sends.redisCommandsPerTurn,
    sendRatios: sendRatios(sends),
    sendCpu: sends.turnCpu,
    manyStreams,
    bareSse,
    versusBareSse,
    sendServerUsPerTurn: sends.serverUsPerTurn,
    sendServerCpuOfReference: sends.serverCpuOfReference,
    targets: targetChecks({
      requests,
      sendStream,
      pgbench,
      sendReference,
      serverUsPerTurn: sends.serverUsPerTurn,
      serverCpuOfReference: sends.serverCpuOfReference,
      versusBareSse,
    }),
    failures: [
      ...requests.flatMap((result) => result.failures),
      ...sends.allSends.flatMap(sendStreamFailures),
      ...sends.allReferenceSends
        .flatMap(sendStreamFailures)
        .map((failure) => `stack reference ${failure}`),
      ...manyStreamsFailures(manyStreams),
      ...manyStreamsFailures(bareSse).map((failure) => `bare SSE server ${failure}`),
    ],
  }
  const paths = writeReport(report)
  console.log(toMarkdown(report))
  say(`wrote ${paths.json}, ${paths.markdown} and ${paths.svg}`)
  return report.failures.length === 0 ? 0 : 1
}

try {
  process.exit(await main())
} catch (error) {
  say(error instanceof Error ? error.message : String(error))
  process.exit(1)
}
