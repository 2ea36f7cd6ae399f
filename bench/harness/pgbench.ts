// The database's ceiling for sends: pgbench replaying the statements one send
// runs (turn-statements.ts), in the same transactions, prepared, with the
// same number of clients as the send scenario, in the same run. Each replayed
// turn gets fresh ids: every UUID the capture saw - a whole parameter, or
// inside one (a send's rows travel as one JSON parameter) - becomes a pgbench
// variable filled by one `SELECT gen_random_uuid() … \gset` at the top of the
// script (one extra round trip a turn, which lowers the ceiling slightly: it
// favours the service). Every other parameter is inlined as a literal.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import postgres from 'postgres'
import type { Step } from './turn-statements.ts'

export const PGBENCH = Bun.which('pgbench')

const UUID_TEXT = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
const UUID = new RegExp(`^${UUID_TEXT}$`, 'i')
/** Every UUID in a text: the ids a replayed turn gets fresh (here and in turn-replay.ts). */
export const UUID_INSIDE = new RegExp(UUID_TEXT, 'gi')

export interface PgbenchResult {
  clients: number
  durationSec: number
  /** Turns (script runs) a second, without the initial connection time. */
  turnsPerSec: number
  /** Turns run in all. */
  turns: number
  /** CPU µs the pgbench process itself used (its clients), when Bun could tell. */
  clientCpuUs: number | undefined
  /** Statements a turn, BEGIN and COMMIT included, and the UUID SELECT. */
  statementsPerTurn: number
  script: string
}

/**
 * `value` as an SQL literal; when UUIDs appear in it, an expression replacing
 * each with its pgbench variable (`replace('…', '<uuid>', :u1)`): pgbench's
 * prepared protocol sends variables as parameters, so one inside quotes would
 * not be replaced.
 */
function literal(value: unknown, variableOf: (uuid: string) => string): string {
  if (value === null || value === undefined) return 'NULL'
  if (typeof value === 'number' || typeof value === 'bigint') return String(value)
  if (typeof value === 'boolean') return value ? 'true' : 'false'
  const text =
    value instanceof Date
      ? value.toISOString()
      : typeof value === 'string'
        ? value
        : JSON.stringify(value)
  // pgbench reads `:name` as a variable even inside a quoted literal (JSON's
  // `"first_turn":true` became a parameter): a space after such a colon keeps
  // JSON equal (and plain text readable).
  const quoted = `'${text.replaceAll("'", "''").replace(/:(?=[A-Za-z_])/g, ': ')}'`
  const inside = new Set(text.match(UUID_INSIDE) ?? [])
  let expression = quoted
  for (const uuid of inside) expression = `replace(${expression}, '${uuid}', :${variableOf(uuid)})`
  return expression
}

/** The pgbench script replaying steps with fresh UUIDs each run. */
export function pgbenchScript(steps: readonly Step[]): string {
  const uuids = new Map<string, string>()
  const variableOf = (uuid: string) => {
    let name = uuids.get(uuid.toLowerCase())
    if (name === undefined) {
      name = `u${uuids.size + 1}`
      uuids.set(uuid.toLowerCase(), name)
    }
    return name
  }
  const lines: string[] = []
  for (const step of steps) {
    if (step.kind === 'begin') lines.push('BEGIN;')
    else if (step.kind === 'commit') lines.push('COMMIT;')
    else {
      // A statement becomes one line, so its `--` comments must go first (they
      // would swallow the rest of it); the service's SQL keeps none in its literals.
      const text = step.text
        .replace(/--[^\n]*/g, '')
        .trim()
        .replace(/;$/, '')
        .replace(/\$(\d+)/g, (_, digits: string) => {
          const value = step.params[Number(digits) - 1]
          if (typeof value === 'string' && UUID.test(value)) return `:${variableOf(value)}`
          return literal(value, variableOf)
        })
      lines.push(`${text.replace(/\s*\n\s*/g, ' ')};`)
    }
  }
  const names = [...uuids.values()]
  const fresh =
    names.length === 0
      ? []
      : [`SELECT ${names.map((name) => `gen_random_uuid() AS ${name}`).join(', ')} \\gset`]
  return `${[...fresh, ...lines].join('\n')}\n`
}

/** libpq's form of a postgres.js URL: search_path moves to PGOPTIONS. */
function libpqTarget(databaseUrl: string): { url: string; options: string | undefined } {
  const url = new URL(databaseUrl)
  const searchPath = url.searchParams.get('search_path')
  url.searchParams.delete('search_path')
  return { url: url.toString(), options: searchPath ? `-c search_path=${searchPath}` : undefined }
}

/** A child's user + system CPU in µs, from its resource usage once it exited. */
function cpuMicroseconds(usage: ReturnType<Subprocess['resourceUsage']>): number | undefined {
  return usage === undefined ? undefined : Number(usage.cpuTime.total)
}

export async function runPgbench(
  databaseUrl: string,
  steps: readonly Step[],
  settings: { clients: number; durationSec: number },
): Promise<PgbenchResult> {
  if (!PGBENCH)
    throw new Error('pgbench is not installed (postgresql-contrib / the postgres client)')
  const script = pgbenchScript(steps)
  const dir = mkdtempSync(join(tmpdir(), 'conduit-pgbench-'))
  const file = join(dir, 'turn.sql')
  writeFileSync(file, script)
  const target = libpqTarget(databaseUrl)
  try {
    const child = Bun.spawn(
      [
        PGBENCH,
        '--no-vacuum',
        '--protocol=prepared',
        `--client=${settings.clients}`,
        `--jobs=${Math.min(2, settings.clients)}`,
        `--time=${Math.max(1, Math.round(settings.durationSec))}`,
        `--file=${file}`,
        target.url,
      ],
      {
        env: { ...process.env, ...(target.options ? { PGOPTIONS: target.options } : {}) },
        stdout: 'pipe',
        stderr: 'pipe',
      },
    )
    const [out, err, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ])
    const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(out)?.[1]
    if (code !== 0 || tps === undefined)
      throw new Error(`pgbench failed (${code}): ${(err || out).trim().slice(-600)}`)
    return {
      clients: settings.clients,
      durationSec: settings.durationSec,
      turnsPerSec: Number(tps),
      turns: Number(/number of transactions actually processed: (\d+)/.exec(out)?.[1] ?? 0),
      clientCpuUs: cpuMicroseconds(child.resourceUsage()),
      // The service's statements, not the line that makes the fresh ids.
      statementsPerTurn: script
        .trim()
        .split('\n')
        .filter((line) => !line.endsWith('\\gset')).length,
      script,
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * In-progress replies the replayed turns left behind: none when the script
 * replays the service faithfully (each turn claims and finishes its own
 * reply). Any left would be taken for crashed turns by the next server's sweep.
 */
export async function unfinishedReplayTurns(databaseUrl: string, userId: string): Promise<number> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const [row] = await sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM messages m JOIN conversations c ON c.id = m.conversation_id
       WHERE c.user_id = ${userId} AND m.status = 'in_progress'`
    return row?.n ?? 0
  } finally {
    await sql.end()
  }
}
