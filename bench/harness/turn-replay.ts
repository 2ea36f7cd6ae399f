// One captured turn (turn-statements.ts) replayed through postgres.js, as the
// stack reference (bare-sends-server.ts) runs it for each request: the same
// statements in the same order, prepared, in a transaction where the capture
// saw one, with fresh ids as the pgbench replay (pgbench.ts) gets them: every
// UUID the capture saw, a whole parameter or inside one, becomes a new random
// one for the turn (made here, not by an extra round trip as pgbench's are).
// The captured reply gets the same fresh ids, so its conversation id is the
// turn's. The turn's Redis commands (turn-redis-commands.ts), when there are
// some, go after its statements with the same fresh ids, under the replay's
// own key prefix, in one pipeline a database: the fewest round trips those
// commands can take.
import { randomUUID } from 'node:crypto'
import type Redis from 'ioredis'
import type postgres from 'postgres'
import { UUID_INSIDE } from './pgbench.ts'
import type { CapturedCommand } from './turn-redis-commands.ts'
import type { Step } from './turn-statements.ts'

interface Statement {
  text: string
  params: unknown[]
}

/** What runs in one go: a lone statement, or the statements of one transaction. */
interface Unit {
  transaction: boolean
  statements: Statement[]
}

/** `value` with `rewrite` applied to its text: a string, or a JSON document's text. */
export function rewriteText(value: unknown, rewrite: (text: string) => string): unknown {
  if (typeof value === 'string') return rewrite(value)
  if (value === null || typeof value !== 'object' || value instanceof Date) return value
  return JSON.parse(rewrite(JSON.stringify(value)))
}

function unitsOf(steps: readonly Step[]): Unit[] {
  const units: Unit[] = []
  let open: Unit | undefined
  for (const step of steps) {
    if (step.kind === 'begin') {
      open = { transaction: true, statements: [] }
      units.push(open)
    } else if (step.kind === 'commit') open = undefined
    else if (open) open.statements.push(step)
    else units.push({ transaction: false, statements: [step] })
  }
  return units
}

/** What the stack reference replays: a captured turn's statements, its Redis commands and its reply. */
export interface ReplayedTurn {
  steps: Step[]
  reply: string
  /** Already under the replay's key prefix (bare-sends.ts); empty without Redis. */
  redisCommands: CapturedCommand[]
}

/** A client of the server and database a captured command ran in ("host:port/db"). */
export type RedisClients = (where: string) => Redis

export const whereOf = (command: Pick<CapturedCommand, 'server' | 'db'>) =>
  `${command.server}/${command.db}`

export interface TurnReplay {
  /** Runs the turn's statements and commands with fresh ids; resolves to the reply with the same ids. */
  run(sql: postgres.Sql, redis?: RedisClients): Promise<string>
}

/** Sends each database's commands in one pipeline; a command Redis refuses is the replay's failure. */
async function replayCommands(
  commands: readonly CapturedCommand[],
  redis: RedisClients,
  fresh: (text: string) => string,
): Promise<void> {
  const pipelines = new Map<string, ReturnType<Redis['pipeline']>>()
  for (const command of commands) {
    const where = whereOf(command)
    let pipeline = pipelines.get(where)
    if (!pipeline) {
      pipeline = redis(where).pipeline()
      pipelines.set(where, pipeline)
    }
    const [name, ...args] = command.args.map(fresh)
    pipeline.call(name ?? 'ping', ...args)
  }
  for (const results of await Promise.all([...pipelines.values()].map((p) => p.exec())))
    for (const [error] of results ?? []) if (error) throw error
}

export function turnReplay({ steps, reply, redisCommands }: ReplayedTurn): TurnReplay {
  const units = unitsOf(steps)
  const run = async (
    sql: postgres.Sql | postgres.TransactionSql,
    statements: Statement[],
    fresh: (text: string) => string,
  ) => {
    for (const { text, params } of statements) {
      const values = params.map((value) => rewriteText(value, fresh))
      await sql.unsafe(text, values as postgres.ParameterOrJSON<never>[], { prepare: true })
    }
  }
  return {
    async run(sql, redis) {
      const ids = new Map<string, string>()
      const fresh = (text: string) =>
        text.replace(UUID_INSIDE, (uuid) => {
          const key = uuid.toLowerCase()
          let id = ids.get(key)
          if (id === undefined) {
            id = randomUUID()
            ids.set(key, id)
          }
          return id
        })
      for (const unit of units) {
        if (unit.transaction) await sql.begin((tx) => run(tx, unit.statements, fresh))
        else await run(sql, unit.statements, fresh)
      }
      if (redis && redisCommands.length > 0) await replayCommands(redisCommands, redis, fresh)
      return fresh(reply)
    },
  }
}
