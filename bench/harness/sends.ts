// The send + stream scenario against its ceilings: with real Postgres and
// pgbench, ROUNDS alternating rounds of sends to the service, the same sends
// (same closed-loop client, same concurrency) to the stack reference - a bare
// Bun + postgres.js server running the statements of one send (bare-sends.ts)
// - and pgbench replaying those statements, so all three meet the same noisy
// minutes; the round with the median service ÷ pgbench share is reported.
// Without them (embedded), one run of sends alone.
import type { Backend } from './backend.ts'
import { deleteReplayedTurns, startSendsReference } from './bare-sends.ts'
import type { BenchOptions } from './options.ts'
import { PGBENCH, type PgbenchResult, runPgbench, unfinishedReplayTurns } from './pgbench.ts'
import { runSendStream } from './send-stream.ts'
import type { StreamSummary } from './stream-summary.ts'
import { meterPgbenchCpu, meterTurnCpu, type TurnCpu } from './turn-cpu.ts'
import { captureTurnStatements } from './turn-statements.ts'

const ROUNDS = 3

export interface SendRound {
  turnsPerSec: number
  referenceTurnsPerSec: number
  pgbenchTurnsPerSec: number
  /** Server CPU µs per turn of the service and of the stack reference in this round. */
  serverUs: number | undefined
  referenceServerUs: number | undefined
}

export interface SendsResult {
  /** The reported round's sends (every round's, when there is no ceiling). */
  sendStream: StreamSummary
  /** The reported round's sends to the stack reference. */
  reference: StreamSummary | undefined
  pgbench: PgbenchResult | undefined
  pgbenchSkipped: string | undefined
  /** Every round: turns/s of the sends, of the stack reference and of pgbench. */
  rounds: SendRound[]
  /** Every round's sends, for the wrong-answer checks. */
  allSends: StreamSummary[]
  /** Every round's sends to the stack reference, for the wrong-answer checks. */
  allReferenceSends: StreamSummary[]
  /** CPU µs per turn by process in the reported round (real Postgres with pgbench only). */
  turnCpu: { service: TurnCpu; reference: TurnCpu; pgbench: TurnCpu } | undefined
  /** The service's server CPU µs per turn: the median round's (every run has it). */
  serverUsPerTurn: number | undefined
  /** Service ÷ stack reference server CPU per turn, median over the rounds (real Postgres only). */
  serverCpuOfReference: number | undefined
  /** The Redis commands of the captured turn, which the stack reference replays too (real Postgres only). */
  redisCommandsPerTurn: number | undefined
}

interface Measured {
  sends: StreamSummary
  reference: StreamSummary
  pgbench: PgbenchResult
  cpu: { service: TurnCpu; reference: TurnCpu; pgbench: TurnCpu }
}

/** One round of sends to `server`, with the CPU each process spent per turn. */
async function metered(
  server: { url: string; pid: number },
  sends: (url: string) => Promise<StreamSummary>,
) {
  const meter = meterTurnCpu(server.pid)
  const summary = await sends(server.url)
  return { summary, cpu: meter.stop(summary.completed) }
}

/** Throws when a replay left replies in progress: it does not replay a send faithfully. */
async function assertFinished(databaseUrl: string, userId: string, replay: string) {
  const unfinished = await unfinishedReplayTurns(databaseUrl, userId)
  if (unfinished > 0)
    throw new Error(
      `${replay} left ${unfinished} replies in progress: it does not replay a send faithfully`,
    )
}

export async function measureSends(
  server: { url: string; pid: number },
  runId: string,
  backend: Backend,
  options: BenchOptions,
  say: (line: string) => void,
): Promise<SendsResult> {
  const sends = (url: string, durationSec: number) =>
    runSendStream(url, runId, { concurrency: options.streamConcurrency, durationSec })
  const skipped = !backend.databaseUrl.startsWith('postgres')
    ? 'the database is embedded (PGlite)'
    : !PGBENCH
      ? 'pgbench is not installed'
      : undefined
  if (skipped) {
    const { summary: sendStream, cpu } = await metered(server, (url) =>
      sends(url, options.durationSec),
    )
    return {
      sendStream,
      reference: undefined,
      pgbench: undefined,
      pgbenchSkipped: skipped,
      rounds: [],
      allSends: [sendStream],
      allReferenceSends: [],
      turnCpu: undefined,
      serverUsPerTurn: cpu.server,
      serverCpuOfReference: undefined,
      redisCommandsPerTurn: undefined,
    }
  }
  say('pgbench: capturing the statements of one send; starting the stack reference')
  const turn = await captureTurnStatements(backend)
  const durationSec = Math.max(2, Math.round(options.durationSec / ROUNDS))
  const measured: Measured[] = []
  const reference = await startSendsReference(backend.databaseUrl, turn)
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const service = await metered(server, (url) => sends(url, durationSec))
      const sendStream = service.summary
      const referenceRound = await metered(reference, (url) => sends(url, durationSec))
      const referenceStream = referenceRound.summary
      const pgbenchMeter = meterPgbenchCpu()
      const pgbench = await runPgbench(backend.databaseUrl, turn.steps, {
        clients: options.streamConcurrency,
        durationSec,
      })
      measured.push({
        sends: sendStream,
        reference: referenceStream,
        pgbench,
        cpu: {
          service: service.cpu,
          reference: referenceRound.cpu,
          pgbench: pgbenchMeter.stop(pgbench.turns, pgbench.clientCpuUs),
        },
      })
      say(
        `send + stream ${sendStream.streamsPerSec.toFixed(0)} turns/s, stack reference ` +
          `${referenceStream.streamsPerSec.toFixed(0)}, pgbench ${pgbench.turnsPerSec.toFixed(0)} ` +
          `(${pgbench.statementsPerTurn} statements a turn)`,
      )
    }
    await assertFinished(backend.databaseUrl, turn.userId, 'the pgbench replay')
    await assertFinished(backend.databaseUrl, reference.userId, 'the stack reference')
  } finally {
    await reference.stop()
    await deleteReplayedTurns(backend.databaseUrl, reference.userId)
    await reference.deleteReplayedKeys()
  }
  const share = (entry: Measured) => entry.sends.streamsPerSec / entry.pgbench.turnsPerSec
  const sorted = [...measured].sort((a, b) => share(a) - share(b))
  const middle = sorted[Math.floor(sorted.length / 2)] ?? (measured[0] as Measured)
  return {
    sendStream: middle.sends,
    reference: middle.reference,
    pgbench: middle.pgbench,
    pgbenchSkipped: undefined,
    rounds: measured.map((entry) => ({
      turnsPerSec: entry.sends.streamsPerSec,
      referenceTurnsPerSec: entry.reference.streamsPerSec,
      pgbenchTurnsPerSec: entry.pgbench.turnsPerSec,
      serverUs: entry.cpu.service.server,
      referenceServerUs: entry.cpu.reference.server,
    })),
    allSends: measured.map((entry) => entry.sends),
    allReferenceSends: measured.map((entry) => entry.reference),
    turnCpu: middle.cpu,
    serverUsPerTurn: median(measured.flatMap((entry) => entry.cpu.service.server ?? [])),
    serverCpuOfReference: median(
      measured.flatMap(({ cpu }) =>
        cpu.service.server !== undefined && cpu.reference.server
          ? [cpu.service.server / cpu.reference.server]
          : [],
      ),
    ),
    redisCommandsPerTurn: turn.redisCommands.length,
  }
}

/** The middle value, or undefined for none. */
function median(values: number[]): number | undefined {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
}

/** The three comparisons of the reported round (real Postgres with pgbench only). */
export interface SendRatios {
  serviceOfPgbench: number
  referenceOfPgbench: number
  serviceOfReference: number
}

export function sendRatios(result: SendsResult): SendRatios | undefined {
  const { sendStream, reference, pgbench } = result
  if (!reference || !pgbench) return undefined
  return {
    serviceOfPgbench: sendStream.streamsPerSec / pgbench.turnsPerSec,
    referenceOfPgbench: reference.streamsPerSec / pgbench.turnsPerSec,
    serviceOfReference: sendStream.streamsPerSec / reference.streamsPerSec,
  }
}
