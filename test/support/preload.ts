// Loaded once before all test files (bunfig.toml). Opens the shared test
// database up front, with time enough for PGlite's first open on a busy
// machine: Bun applies a per-file 5 s default to hooks, and
// setDefaultTimeout() here would only reach the first file. Closes and drops
// the shared backends once every file has run.
import { afterAll, beforeAll } from 'bun:test'
import { cleanupBackends, testDb } from './backends.ts'

beforeAll(async () => {
  await testDb()
}, 120_000)
afterAll(cleanupBackends, 60_000)
