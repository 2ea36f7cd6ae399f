// A fresh embedded database from a template: PGlite's initdb (in WASM) takes
// about 5 s, reopening a database 0.5 s. The first fresh start initializes a
// template directory once, per PGlite version, under node_modules/.cache;
// every fresh DATA_DIR after it is a copy of that template, opened as an
// existing database. Migrations run afterwards as always, so the template
// never goes stale when one is added. Any failure falls back to PGlite's own
// initialization in DATA_DIR.
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { PGlite } from '@electric-sql/pglite'

/** The template of this PGlite version, under node_modules/.cache/conduit. */
export function defaultTemplateDir(): string {
  const manifest = Bun.resolveSync('@electric-sql/pglite/package.json', import.meta.dir)
  const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }
  return resolve(dirname(manifest), '../../.cache/conduit', `pglite-${version}-template`)
}

/** Whether dir holds a database already (PGlite, like Postgres, writes PG_VERSION first). */
export const hasDatabase = (dir: string) => existsSync(join(dir, 'PG_VERSION'))

/**
 * Creates the template unless it exists: a freshly initialized, cleanly closed
 * data directory, built beside it and renamed into place, so a reader never
 * sees half of one and two processes creating it at once are harmless.
 */
export async function ensureTemplate(templateDir: string): Promise<void> {
  if (hasDatabase(templateDir)) return
  mkdirSync(dirname(templateDir), { recursive: true })
  const building = `${templateDir}.${process.pid}.${Date.now()}.tmp`
  try {
    const pg = new PGlite(building)
    await pg.waitReady
    await pg.close()
    renameSync(building, templateDir)
  } catch (error) {
    // Someone else's rename won: theirs is as good as ours.
    if (!hasDatabase(templateDir)) throw error
  } finally {
    rmSync(building, { recursive: true, force: true })
  }
}

/**
 * Makes dataDir a copy of the template when it holds no database yet; returns
 * whether it did. Never touches a directory that already has a database.
 */
export async function seedFromTemplate(
  dataDir: string,
  templateDir = defaultTemplateDir(),
): Promise<boolean> {
  if (hasDatabase(dataDir)) return false
  try {
    await ensureTemplate(templateDir)
  } catch {
    return false
  }
  try {
    // PG_VERSION last: a copy cut short leaves no half database behind it.
    cpSync(templateDir, dataDir, {
      recursive: true,
      filter: (source) => source !== join(templateDir, 'PG_VERSION'),
    })
    cpSync(join(templateDir, 'PG_VERSION'), join(dataDir, 'PG_VERSION'))
    return true
  } catch {
    for (const entry of readdirSync(templateDir))
      rmSync(join(dataDir, entry), { recursive: true, force: true })
    return false
  }
}
