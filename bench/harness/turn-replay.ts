// One captured turn (turn-statements.ts) replayed through postgres.js, as the
// stack reference (bare-sends-server.ts) runs it for each request: the same
// statements in the same order, prepared, in a transaction where the capture
// saw one, with fresh ids as the pgbench replay (pgbench.ts) gets them: every
// UUID the capture saw, a whole parameter or inside one, becomes a new random
// one for the turn (made here, not by an extra round trip as pgbench's are).
// The captured reply gets the same fresh ids, so its conversation id is the
// turn's.
import { randomUUID } from 'node:crypto'
import type postgres from 'postgres'
import { UUID_INSIDE } from './pgbench.ts'
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

/** What the stack reference replays: a captured turn's statements and its reply. */
export interface ReplayedTurn {
  steps: Step[]
  reply: string
}

export interface TurnReplay {
  /** Runs the turn's statements with fresh ids; resolves to the reply with the same ids. */
  run(sql: postgres.Sql): Promise<string>
}

export function turnReplay({ steps, reply }: ReplayedTurn): TurnReplay {
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
    async run(sql) {
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
      return fresh(reply)
    },
  }
}
