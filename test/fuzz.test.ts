// Fuzzing every input route of the full app with a seeded generator of bad
// requests (test/support/bad-requests.ts): each must be answered with a 4xx
// §3 error body, store nothing and change no cache key. The seed is in the
// test's name; FUZZ_SEED=<seed> bun test test/fuzz.test.ts replays a run.
import { describe, expect, test } from 'bun:test'
import type { Cache } from '../src/storage/cache.ts'
import { suiteApp } from './support/backend-apps.ts'
import { appBackends } from './support/backends.ts'
import { badRequests } from './support/bad-requests.ts'
import { newUser } from './support/conversation-app.ts'
import { storedCounts } from './support/stored-counts.ts'

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 600)

/** The cache, counting every call that would change a key. */
function countingWrites(cache: Cache) {
  const writes: string[] = []
  const record =
    <A extends unknown[], R>(name: string, run: (...args: A) => Promise<R>) =>
    (...args: A) => {
      writes.push(name)
      return run(...args)
    }
  const counted: Cache = {
    ...cache,
    kind: cache.kind,
    get: (key) => cache.get(key),
    ttl: (key) => cache.ttl(key),
    listAll: (key) => cache.listAll(key),
    ping: () => cache.ping(),
    close: () => cache.close(),
    set: record('set', (key: string, value: string, ttl?: number) => cache.set(key, value, ttl)),
    del: record('del', (...keys: string[]) => cache.del(...keys)),
    incr: record('incr', (key: string) => cache.incr(key)),
    listPush: record(
      'listPush',
      (key: string, values: readonly string[], max: number, ttl: number) =>
        cache.listPush(key, values, max, ttl),
    ),
    listPushIfPresent: record(
      'listPushIfPresent',
      (key: string, values: readonly string[], max: number, ttl: number) =>
        cache.listPushIfPresent(key, values, max, ttl),
    ),
    listReplace: record('listReplace', (key: string, values: readonly string[], ttl: number) =>
      cache.listReplace(key, values, ttl),
    ),
    flush: record('flush', () => cache.flush()),
  }
  return { cache: counted, writes }
}

for (const backend of appBackends())
  describe(backend.name, () => {
    let writes: string[]
    const t = suiteApp(async () => {
      const counted = countingWrites(backend.cache())
      writes = counted.writes
      return { backend, cache: counted.cache, env: { ADMIN_TOKEN: 'fuzz-admin' } }
    })

    test(`seed ${SEED}: ${REQUESTS} bad requests are all 4xx, store nothing, write no cache key`, async () => {
      const failures: string[] = []
      const user = newUser()
      const before = await storedCounts(t.db)
      let index = 0
      for (const request of badRequests(SEED, REQUESTS, user)) {
        const response = await t.app.handle(
          new Request(`http://localhost${request.path}`, {
            method: request.method,
            headers: request.headers,
            body: request.body,
          }),
        )
        const text = await response.text()
        let shape = false
        try {
          const body = JSON.parse(text) as Record<string, unknown>
          shape = typeof body.detail === 'string' && typeof body.code === 'string'
        } catch {}
        if (response.status < 400 || response.status > 499 || !shape)
          failures.push(`#${index} ${request.label}: ${response.status} ${text.slice(0, 160)}`)
        if (writes.length > 0)
          failures.push(`#${index} ${request.label}: cache ${writes.splice(0)}`)
        index++
      }
      expect(failures).toEqual([])
      expect(await storedCounts(t.db)).toEqual(before)
      expect(await t.db.query('SELECT id FROM users WHERE id = $1', [user])).toEqual([])
    }, 120_000)
  })
