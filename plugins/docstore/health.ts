// GET /health of the document store (spec §4, CONTRACT §6): real checks of the
// database and the cache. Only the database decides the status code, because
// the cache holds nothing but copies.

import { probe } from '../../src/http/dependency-probe.ts'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db } from '../../src/storage/db.ts'

export interface DocstoreHealth {
  status: 200 | 503
  body: {
    api: 'healthy'
    postgres: string
    redis: 'connected' | 'disconnected'
    database: Db['kind']
    cache: Cache['kind']
  }
}

export async function checkHealth(db: Db, cache: Cache): Promise<DocstoreHealth> {
  const [database, cacheResult] = await Promise.all([
    probe(() => db.ping()),
    probe(() => cache.ping()),
  ])
  return {
    status: database.ok ? 200 : 503,
    body: {
      api: 'healthy',
      postgres: database.ok ? 'connected' : `error: ${database.message}`,
      redis: cacheResult.ok ? 'connected' : 'disconnected',
      database: db.kind,
      cache: cache.kind,
    },
  }
}
