// Applies the numbered .sql files in ./migrations once each, in order, and
// records them. An advisory lock keeps two instances starting together from
// applying the same file twice.
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Db } from './db.ts'

const MIGRATIONS_DIR = join(import.meta.dir, 'migrations')
/** Arbitrary constant naming this project's migration lock. */
const MIGRATION_LOCK_ID = 7_215_004

export interface Migration {
  version: string
  sql: string
}

/** The migrations shipped with the service, ordered by their number. */
export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((name) => /^\d+_.+\.sql$/.test(name)).sort()
  return Promise.all(
    files.map(async (name) => ({
      version: name.replace(/\.sql$/, ''),
      sql: await Bun.file(join(dir, name)).text(),
    })),
  )
}

/** Applies every migration not yet recorded; returns the versions applied now. */
export async function migrate(db: Db, migrations?: Migration[]): Promise<string[]> {
  const pending = migrations ?? (await loadMigrations())
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID])
    await tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`)
    const done = new Set(
      (await tx.query<{ version: string }>('SELECT version FROM schema_migrations')).map(
        (row) => row.version,
      ),
    )
    const applied: string[] = []
    for (const migration of pending) {
      if (done.has(migration.version)) continue
      await tx.exec(migration.sql)
      await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [migration.version])
      applied.push(migration.version)
    }
    return applied
  })
}
