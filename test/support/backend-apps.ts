// The setup every app-level suite repeats, in one call: a describe block per
// app backend (appBackends(): embedded always, real Postgres + Redis when
// TEST_DATABASE_URL / TEST_REDIS_URL are set), each with a test app of the
// suite's options built before its first test; that app on its own, for a
// block that needs more than one app or something built alongside it; and the
// backend's database alone, for suites that build their own app (the
// document store, the variants).
import { beforeAll, describe } from 'bun:test'
import type { Db } from '../../src/storage/db.ts'
import { type AppBackend, appBackends } from './backends.ts'
import { conversationApp, type TestApp, type TestAppOptions } from './conversation-app.ts'

/** What a suite's app is built from: conversationApp's options, less the backend. */
export type AppSetup = Omit<TestAppOptions, 'backend'>

/** The first open of the shared test database can take several seconds (PGlite) on a busy machine. */
const BUILD_WITHIN_MS = 60_000

/**
 * The app of `options` (or of what they resolve to: a database wrapping the
 * backend's, say), built in the current describe block's beforeAll. It is
 * filled in before the block's tests run, so read it in tests and hooks, not
 * while declaring them.
 */
export function suiteApp(options: TestAppOptions | (() => Promise<TestAppOptions>)): TestApp {
  // Empty until beforeAll: tests only run after it.
  const t = {} as TestApp
  beforeAll(async () => {
    Object.assign(
      t,
      await conversationApp(typeof options === 'function' ? await options() : options),
    )
  }, BUILD_WITHIN_MS)
  return t
}

/** The backend's shared database, opened in the current describe block's beforeAll (read it as suiteApp's). */
export function suiteDb(backend: AppBackend): Db {
  // Empty until beforeAll; the adapters are plain objects, so a copy serves as they do.
  const db = {} as Db
  beforeAll(async () => {
    Object.assign(db, await backend.db())
  }, BUILD_WITHIN_MS)
  return db
}

/**
 * describe(backend.name) for every app backend, with the suiteApp of `setup`
 * on it: one object for all backends, or a function of the backend, called in
 * beforeAll (for options known only then: the address of a server started
 * before, a model of its own per backend).
 */
export function describeEachBackend(
  setup: AppSetup | ((backend: AppBackend) => AppSetup | Promise<AppSetup>),
  body: (t: TestApp, backend: AppBackend) => void,
): void {
  for (const backend of appBackends())
    describe(backend.name, () => {
      const options = async () => ({
        ...(typeof setup === 'function' ? await setup(backend) : setup),
        backend,
      })
      body(suiteApp(options), backend)
    })
}
