// Loaded before every test file (bunfig.toml): gives tests that start servers
// and talk to real databases time enough, and closes and drops the shared test
// backends once all tests have run.
import { afterAll, setDefaultTimeout } from 'bun:test'
import { cleanupBackends } from './backends.ts'

setDefaultTimeout(30_000)
afterAll(cleanupBackends)
