// The send + stream scenario against its ceiling: with real Postgres and
// pgbench, ROUNDS alternating rounds of sends (closed loop) and pgbench
// replaying the statements of one send (captured from the service), so both
// meet the same noisy minutes; the round with the median share is reported.
// Without them (embedded), one run of sends alone.
import type { Backend } from './backend.ts'
import type { BenchOptions } from './options.ts'
import { PGBENCH, type PgbenchResult, runPgbench, unfinishedReplayTurns } from './pgbench.ts'
import { runSendStream } from './send-stream.ts'
import type { StreamSummary } from './stream-summary.ts'
import { captureTurnStatements } from './turn-statements.ts'

const ROUNDS = 3

export interface SendsResult {
  /** The reported round's sends (every round's, when there is no ceiling). */
  sendStream: StreamSummary
  pgbench: PgbenchResult | undefined
  pgbenchSkipped: string | undefined
  /** Every round: turns/s of the sends and of pgbench. */
  rounds: { turnsPerSec: number; pgbenchTurnsPerSec: number }[]
  /** Every round's sends, for the wrong-answer checks. */
  allSends: StreamSummary[]
}

export async function measureSends(
  serverUrl: string,
  runId: string,
  backend: Backend,
  options: BenchOptions,
  say: (line: string) => void,
): Promise<SendsResult> {
  const sends = (durationSec: number) =>
    runSendStream(serverUrl, runId, { concurrency: options.streamConcurrency, durationSec })
  const skipped = !backend.databaseUrl.startsWith('postgres')
    ? 'the database is embedded (PGlite)'
    : !PGBENCH
      ? 'pgbench is not installed'
      : undefined
  if (skipped) {
    const sendStream = await sends(options.durationSec)
    return {
      sendStream,
      pgbench: undefined,
      pgbenchSkipped: skipped,
      rounds: [],
      allSends: [sendStream],
    }
  }
  say('pgbench: capturing the statements of one send')
  const { steps, userId } = await captureTurnStatements(backend)
  const durationSec = Math.max(2, Math.round(options.durationSec / ROUNDS))
  const measured: { sends: StreamSummary; pgbench: PgbenchResult }[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const sendStream = await sends(durationSec)
    const pgbench = await runPgbench(backend.databaseUrl, steps, {
      clients: options.streamConcurrency,
      durationSec,
    })
    measured.push({ sends: sendStream, pgbench })
    say(
      `send + stream ${sendStream.streamsPerSec.toFixed(0)} turns/s, pgbench ${pgbench.turnsPerSec.toFixed(0)} ` +
        `(${pgbench.statementsPerTurn} statements a turn)`,
    )
  }
  const unfinished = await unfinishedReplayTurns(backend.databaseUrl, userId)
  if (unfinished > 0)
    throw new Error(
      `the pgbench replay left ${unfinished} replies in progress: its script does not replay a send faithfully`,
    )
  const share = (entry: (typeof measured)[number]) =>
    entry.sends.streamsPerSec / entry.pgbench.turnsPerSec
  const sorted = [...measured].sort((a, b) => share(a) - share(b))
  const middle = sorted[Math.floor(sorted.length / 2)] ?? (measured[0] as (typeof measured)[number])
  return {
    sendStream: middle.sends,
    pgbench: middle.pgbench,
    pgbenchSkipped: undefined,
    rounds: measured.map((entry) => ({
      turnsPerSec: entry.sends.streamsPerSec,
      pgbenchTurnsPerSec: entry.pgbench.turnsPerSec,
    })),
    allSends: measured.map((entry) => entry.sends),
  }
}
