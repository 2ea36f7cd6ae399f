// Loaded once before all test files (bunfig.toml). Opens the shared database of
// every app backend up front, with time enough for PGlite's first open on a
// busy machine: Bun applies a per-file 5 s default to hooks, and
// setDefaultTimeout() here would only reach the first file. Closes and drops
// the shared backends, and kills the private Redis deployments, once every
// file has run.
import { afterAll, beforeAll } from 'bun:test'
import { appBackends, cleanupBackends } from './backends.ts'
import { stopRedisDeployments } from './redis-deployments.ts'

beforeAll(async () => {
  await Promise.all(appBackends().map((backend) => backend.db()))
}, 120_000)
afterAll(cleanupBackends, 60_000)
// The private Redis Cluster and Sentinel processes tests started (redis-deployments.ts).
afterAll(stopRedisDeployments, 30_000)
