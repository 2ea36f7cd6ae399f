// Whether this process can take traffic (GET /ready): its stores answer and it
// is not shutting down. Migrations need no check of their own: the server
// only starts listening once they ran (src/index.ts), so until then the port
// is closed, which every load balancer reads as "not ready".
//
// Each store is probed with a timeout (dependency-probe.ts). The database and
// the state store are required: without them no turn can be accepted. The
// cache is reported but not required: it holds only copies, and the service
// answers correctly from the database while it is down, so taking every
// instance out of the balancer for it would turn a slower service into none.
import { type ProbeResult, probe } from './dependency-probe.ts'

export interface ReadinessCheck {
  check: () => Promise<void>
  /** False: reported, but a failure does not make the process unready. */
  required: boolean
}

export interface ReadinessReport {
  ready: boolean
  shuttingDown: boolean
  /** `ok`, or a short message that is safe to show, per store. */
  checks: Record<string, string>
}

export interface Readiness {
  /** From now on the process reports itself not ready (SIGTERM). */
  shutDown(): void
  report(): Promise<ReadinessReport>
}

export function createReadiness(checks: Record<string, ReadinessCheck>): Readiness {
  let shuttingDown = false
  const describe = (result: ProbeResult) => (result.ok ? 'ok' : result.message)
  return {
    shutDown() {
      shuttingDown = true
    },
    async report() {
      const names = Object.keys(checks)
      const results = await Promise.all(names.map((name) => probe(checks[name]?.check ?? noop)))
      const failedRequired = names.some(
        (name, index) => checks[name]?.required && !results[index]?.ok,
      )
      return {
        ready: !shuttingDown && !failedRequired,
        shuttingDown,
        checks: Object.fromEntries(
          names.map((name, index) => [name, describe(results[index] ?? { ok: true })]),
        ),
      }
    },
  }
}

const noop = async () => {}

/** The checks of the stores a variant has: the database and state required, the cache not. */
export function storeChecks(stores: {
  db?: { ping(): Promise<void> }
  cache?: { ping(): Promise<void> }
  state?: { ping(): Promise<void> }
}): Record<string, ReadinessCheck> {
  const checks: Record<string, ReadinessCheck> = {}
  const { db, cache, state } = stores
  if (db) checks.database = { check: () => db.ping(), required: true }
  if (state) checks.state = { check: () => state.ping(), required: true }
  if (cache) checks.cache = { check: () => cache.ping(), required: false }
  return checks
}
