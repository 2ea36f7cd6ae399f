// Starts the send scenario's stack reference (bare-sends-server.ts) as a child
// process, like the service, on the turn captured from it. Its turns belong to
// a user of their own, so the run tells its leftovers apart from pgbench's
// (unfinishedReplayTurns in pgbench.ts) and deletes its rows afterwards; its
// Redis keys live under a prefix of their own, deleted afterwards too.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { serialize } from 'node:v8'
import Redis from 'ioredis'
import postgres from 'postgres'
import { type ReferenceServer, startReference } from './bare.ts'
import { type ReplayedTurn, rewriteText, whereOf } from './turn-replay.ts'
import type { CapturedTurn } from './turn-statements.ts'

export interface SendsReference extends ReferenceServer {
  /** The user of every turn the reference replays. */
  userId: string
  /** Deletes the Redis keys the reference's turns wrote. */
  deleteReplayedKeys(): Promise<void>
}

/**
 * `turn` with its user renamed to `userId`, wherever its id appears in a
 * parameter or a Redis command, and its Redis keys under `keyPrefix`.
 */
function asUser(turn: CapturedTurn, userId: string, keyPrefix: string): ReplayedTurn {
  const rename = (text: string) => text.replaceAll(turn.userId, userId)
  const steps = turn.steps.map((step) =>
    step.kind === 'query'
      ? { ...step, params: step.params.map((value) => rewriteText(value, rename)) }
      : step,
  )
  const redisCommands = turn.redisCommands.map((command) => ({
    ...command,
    args: command.args.map((arg) => rename(arg).replaceAll(turn.keyPrefix, keyPrefix)),
  }))
  return { steps, reply: turn.reply, redisCommands }
}

/** Deletes every key under `prefix` in each database the commands ran in. */
async function deleteKeys(turn: ReplayedTurn, prefix: string): Promise<void> {
  for (const where of new Set(turn.redisCommands.map(whereOf))) {
    const redis = new Redis(`redis://${where}`, { maxRetriesPerRequest: 1 })
    try {
      let cursor = '0'
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1_000)
        if (keys.length > 0) await redis.del(...keys)
        cursor = next
      } while (cursor !== '0')
    } finally {
      redis.disconnect()
    }
  }
}

export async function startSendsReference(
  databaseUrl: string,
  turn: CapturedTurn,
): Promise<SendsReference> {
  const userId = `${turn.userId}-reference`
  const keyPrefix = turn.keyPrefix.replace('bench-capture-', 'bench-reference-')
  const replayed = asUser(turn, userId, keyPrefix)
  // Serialized with Dates and BigInts intact, so postgres.js types the parameters as the service's.
  const dir = mkdtempSync(join(tmpdir(), 'conduit-bare-sends-'))
  const file = join(dir, 'turn.bin')
  writeFileSync(file, serialize(replayed))
  try {
    const reference = await startReference('bare-sends-server.ts', [file], {
      DATABASE_URL: databaseUrl,
    })
    return {
      ...reference,
      userId,
      deleteReplayedKeys: async () => {
        await deleteKeys(replayed, keyPrefix)
        await deleteKeys({ ...replayed, redisCommands: turn.redisCommands }, turn.keyPrefix)
      },
    }
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
