// A fresh embedded database from the template (pglite-template.ts): a new
// DATA_DIR becomes a copy of an initialized template, opens as an existing
// database and takes the migrations; a directory that holds a database is
// never overwritten; the template is made once. Also: ping (which answers
// from a check made within the last second) never answers for a closed database.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadMigrations, migrate } from '../../src/storage/migrate.ts'
import { createPgliteDb } from '../../src/storage/pglite.ts'
import { ensureTemplate, hasDatabase, seedFromTemplate } from '../../src/storage/pglite-template.ts'

const root = mkdtempSync(join(tmpdir(), 'conduit-template-'))
const templateDir = join(root, 'template')
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('PGlite template', () => {
  test('a fresh data dir is seeded from the template, opens, and takes every migration', async () => {
    const dataDir = join(root, 'fresh')
    expect(await seedFromTemplate(dataDir, templateDir)).toBe(true)
    expect(hasDatabase(templateDir)).toBe(true)
    expect(hasDatabase(dataDir)).toBe(true)
    const db = await createPgliteDb(dataDir)
    try {
      const applied = await migrate(db)
      expect(applied).toEqual((await loadMigrations()).map((migration) => migration.version))
      await db.query("INSERT INTO users (id) VALUES ('seeded')")
      expect(await db.query('SELECT id FROM users')).toEqual([{ id: 'seeded' }])
      // ping answers while open, and never for a closed database.
      await expect(db.ping()).resolves.toBeUndefined()
      await expect(db.ping()).resolves.toBeUndefined()
    } finally {
      await db.close()
    }
    await expect(db.ping()).rejects.toThrow(/closed/)
  }, 120_000)

  test('a data dir that holds a database is never overwritten', async () => {
    const dataDir = join(root, 'existing')
    expect(await seedFromTemplate(dataDir, templateDir)).toBe(true)
    const db = await createPgliteDb(dataDir)
    await migrate(db)
    await db.query("INSERT INTO users (id) VALUES ('kept')")
    await db.close()
    expect(await seedFromTemplate(dataDir, templateDir)).toBe(false)
    const reopened = await createPgliteDb(dataDir)
    try {
      expect(await migrate(reopened)).toEqual([])
      expect(await reopened.query('SELECT id FROM users')).toEqual([{ id: 'kept' }])
    } finally {
      await reopened.close()
    }
  }, 120_000)

  test('the template is made once, and a data dir holding only a lock file is still seeded', async () => {
    const before = statSync(join(templateDir, 'PG_VERSION')).mtimeMs
    await ensureTemplate(templateDir)
    expect(statSync(join(templateDir, 'PG_VERSION')).mtimeMs).toBe(before)
    const dataDir = mkdtempSync(join(root, 'locked-'))
    writeFileSync(join(dataDir, '.lock'), '{}')
    expect(await seedFromTemplate(dataDir, templateDir)).toBe(true)
    expect(hasDatabase(dataDir)).toBe(true)
  }, 60_000)
})
