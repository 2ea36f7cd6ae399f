// Starts the send scenario's stack reference (bare-sends-server.ts) as a child
// process, like the service, on the turn captured from it. Its turns belong to
// a user of their own, so the run tells its leftovers apart from pgbench's
// (unfinishedReplayTurns in pgbench.ts) and deletes its rows afterwards.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { serialize } from 'node:v8'
import postgres from 'postgres'
import { type ReferenceServer, startReference } from './bare.ts'
import { type ReplayedTurn, rewriteText } from './turn-replay.ts'
import type { CapturedTurn } from './turn-statements.ts'

export interface SendsReference extends ReferenceServer {
  /** The user of every turn the reference replays. */
  userId: string
}

/** `turn` with its user renamed to `userId`, wherever its id appears in a parameter. */
function asUser(turn: CapturedTurn, userId: string): ReplayedTurn {
  const rename = (text: string) => text.replaceAll(turn.userId, userId)
  const steps = turn.steps.map((step) =>
    step.kind === 'query'
      ? { ...step, params: step.params.map((value) => rewriteText(value, rename)) }
      : step,
  )
  return { steps, reply: turn.reply }
}

export async function startSendsReference(
  databaseUrl: string,
  turn: CapturedTurn,
): Promise<SendsReference> {
  const userId = `${turn.userId}-reference`
  // Serialized with Dates and BigInts intact, so postgres.js types the parameters as the service's.
  const dir = mkdtempSync(join(tmpdir(), 'conduit-bare-sends-'))
  const file = join(dir, 'turn.bin')
  writeFileSync(file, serialize(asUser(turn, userId)))
  try {
    const reference = await startReference('bare-sends-server.ts', [file], {
      DATABASE_URL: databaseUrl,
    })
    return { ...reference, userId }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Deletes the reference's user, and with it (ON DELETE CASCADE) every turn it replayed. */
export async function deleteReplayedTurns(databaseUrl: string, userId: string): Promise<void> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    await sql`DELETE FROM users WHERE id = ${userId}`
  } finally {
    await sql.end()
  }
}
