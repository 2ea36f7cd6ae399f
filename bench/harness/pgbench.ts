// The database's ceiling for sends: pgbench replaying the statements one send
// runs (turn-statements.ts), in the same transactions, prepared, with the
// same number of clients as the send scenario, in the same run. Each replayed
// turn gets fresh ids: every UUID the capture saw becomes a pgbench variable
// filled by one `SELECT gen_random_uuid() … \gset` at the top of the script
// (one extra round trip a turn, which lowers the ceiling slightly: it favours
// the service). Every other parameter is inlined as a literal.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Step } from './turn-statements.ts'

export const PGBENCH = Bun.which('pgbench')

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export interface PgbenchResult {
  clients: number
  durationSec: number
  /** Turns (script runs) a second, without the initial connection time. */
  turnsPerSec: number
  /** Statements a turn, BEGIN and COMMIT included, and the UUID SELECT. */
  statementsPerTurn: number
  script: string
}

function literal(value: unknown): string {
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
  return `'${text.replaceAll("'", "''").replace(/:(?=[A-Za-z_])/g, ': ')}'`
}

/** The pgbench script replaying steps with fresh UUIDs each run. */
export function pgbenchScript(steps: readonly Step[]): string {
  const uuids = new Map<string, string>()
  const lines: string[] = []
  for (const step of steps) {
    if (step.kind === 'begin') lines.push('BEGIN;')
    else if (step.kind === 'commit') lines.push('COMMIT;')
    else {
      const text = step.text
        .trim()
        .replace(/;$/, '')
        .replace(/\$(\d+)/g, (_, digits: string) => {
          const value = step.params[Number(digits) - 1]
          if (typeof value === 'string' && UUID.test(value)) {
            let name = uuids.get(value.toLowerCase())
            if (name === undefined) {
              name = `u${uuids.size + 1}`
              uuids.set(value.toLowerCase(), name)
            }
            return `:${name}`
          }
          return literal(value)
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
      statementsPerTurn: script.trim().split('\n').length,
      script,
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
