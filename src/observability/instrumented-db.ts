// A Db decorator that reports the pool's use for /metrics: every query or
// transaction in flight holds one connection of the pool (poolSize of them)
// or waits for one. postgres.js exposes no pool statistics, so they are
// counted here, at the port, for both adapters (PGlite is a pool of one).
import type { Db } from '../storage/db.ts'
import type { Metrics } from './metrics.ts'

export function instrumentedDb(db: Db, poolSize: number, metrics: Pick<Metrics, 'dbPool'>): Db {
  let inFlight = 0
  const report = () => {
    metrics.dbPool.set({ state: 'in_use' }, Math.min(inFlight, poolSize))
    metrics.dbPool.set({ state: 'waiting' }, Math.max(0, inFlight - poolSize))
  }
  metrics.dbPool.set({ state: 'size' }, poolSize)
  report()
  async function counted<T>(run: () => Promise<T>): Promise<T> {
    inFlight++
    report()
    try {
      return await run()
    } finally {
      inFlight--
      report()
    }
  }
  return {
    kind: db.kind,
    query: (text, params) => counted(() => db.query(text, params)),
    exec: (script) => counted(() => db.exec(script)),
    transaction: (fn) => counted(() => db.transaction(fn)),
    ping: () => counted(() => db.ping()),
    close: () => db.close(),
  }
}
