// The Cache port contract, run unchanged over every adapter in cacheBackends()
// (the in-process cache always, real Redis when TEST_REDIS_URL is set): strings,
// expiry, del, incr, the list operations, flush and ping. The same
// assertions for both adapters are the point: the service cannot tell them apart.
import { beforeAll, describe, expect, test } from 'bun:test'
import type { Cache } from '../../src/storage/cache.ts'
import { cacheBackends, uniqueName } from '../support/backends.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

for (const backend of cacheBackends()) {
  describe(`Cache contract: ${backend.name}`, () => {
    let cache: Cache
    const key = (label: string) => uniqueName(label)

    beforeAll(async () => {
      cache = await backend.open()
    }, 30_000)

    test('kind names the adapter', () => {
      expect(cache.kind).toBe(backend.name.includes('memory') ? 'memory' : 'redis')
    })

    test('get returns what set stored, and null for an absent key', async () => {
      const k = key('str')
      expect(await cache.get(k)).toBeNull()
      await cache.set(k, 'first')
      expect(await cache.get(k)).toBe('first')
      await cache.set(k, 'ünïcode ✓ "quoted"\nline')
      expect(await cache.get(k)).toBe('ünïcode ✓ "quoted"\nline')
      await cache.set(k, '')
      expect(await cache.get(k)).toBe('')
    })

    test('ttl: between 1 and N with an expiry, -1 without, -2 when absent', async () => {
      const withTtl = key('ttl')
      const without = key('ttl')
      await cache.set(withTtl, 'v', 60)
      await cache.set(without, 'v')
      const remaining = await cache.ttl(withTtl)
      expect(remaining).toBeGreaterThanOrEqual(1)
      expect(remaining).toBeLessThanOrEqual(60)
      expect(await cache.ttl(without)).toBe(-1)
      expect(await cache.ttl(key('absent'))).toBe(-2)
    })

    test('set without a ttl clears an earlier expiry', async () => {
      const k = key('persist')
      await cache.set(k, 'v', 60)
      await cache.set(k, 'w')
      expect(await cache.ttl(k)).toBe(-1)
    })

    test('keys with a 1 s ttl are gone after it', async () => {
      const str = key('exp')
      const list = key('exp')
      const replaced = key('exp')
      const kept = key('exp')
      await cache.set(str, 'v', 1)
      await cache.listPush(list, ['a'], 10, 1)
      await cache.listReplace(replaced, ['a', 'b'], 1)
      await cache.set(kept, 'v', 60)
      expect(await cache.get(str)).toBe('v')
      expect(await cache.listAll(list)).toEqual(['a'])

      await sleep(1_300)

      expect(await cache.get(str)).toBeNull()
      expect(await cache.ttl(str)).toBe(-2)
      expect(await cache.listAll(list)).toEqual([])
      expect(await cache.listAll(replaced)).toEqual([])
      expect(await cache.get(kept)).toBe('v')
      // An expired key is absent for every operation.
      expect(await cache.del(str, list)).toBe(0)
      expect(await cache.incr(str)).toBe(1)
    })

    test('del deletes the keys and counts those that existed', async () => {
      const a = key('del')
      const b = key('del')
      const list = key('del')
      await cache.set(a, '1')
      await cache.set(b, '2')
      await cache.listPush(list, ['x'], 5, 60)
      expect(await cache.del(a, b, list, key('absent'))).toBe(3)
      expect(await cache.get(a)).toBeNull()
      expect(await cache.get(b)).toBeNull()
      expect(await cache.listAll(list)).toEqual([])
      expect(await cache.del(a)).toBe(0)
      expect(await cache.del()).toBe(0)
    })

    test('fill stores with its expiry when nothing deleted the key since startFill', async () => {
      const a = key('fill')
      const token = await cache.startFill(a)
      expect(await cache.fill(a, token, 'copy', 60)).toBe(true)
      expect(await cache.get(a)).toBe('copy')
      expect(await cache.ttl(a)).toBeGreaterThan(55)
      // A token fills once.
      await cache.del(a)
      expect(await cache.fill(a, token, 'again', 60)).toBe(false)
      expect(await cache.get(a)).toBeNull()
    })

    test('a del after startFill voids the fill: a copy read before a change is not stored after it', async () => {
      const a = key('fill')
      const other = key('fill')
      const token = await cache.startFill(a)
      const otherToken = await cache.startFill(other)
      expect(await cache.del(a)).toBe(0)
      expect(await cache.fill(a, token, 'stale', 60)).toBe(false)
      expect(await cache.get(a)).toBeNull()
      // Only the deleted key's fill is void; del counts keys, not fill markers.
      expect(await cache.fill(other, otherToken, 'fresh', 60)).toBe(true)
      expect(await cache.get(other)).toBe('fresh')
    })

    test('a later startFill, a flush or a wrong token voids a fill', async () => {
      const a = key('fill')
      const first = await cache.startFill(a)
      const second = await cache.startFill(a)
      expect(await cache.fill(a, first, 'first', 60)).toBe(false)
      expect(await cache.fill(a, 'not-a-token', 'forged', 60)).toBe(false)
      expect(await cache.fill(a, second, 'second', 60)).toBe(true)
      expect(await cache.get(a)).toBe('second')
      const flushed = key('fill')
      const token = await cache.startFill(flushed)
      await cache.flush()
      expect(await cache.fill(flushed, token, 'stale', 60)).toBe(false)
      expect(await cache.get(flushed)).toBeNull()
    })

    test('incr counts from an absent key and from an existing integer', async () => {
      const absent = key('incr')
      expect(await cache.incr(absent)).toBe(1)
      expect(await cache.incr(absent)).toBe(2)
      expect(await cache.get(absent)).toBe('2')
      expect(await cache.ttl(absent)).toBe(-1)

      const existing = key('incr')
      await cache.set(existing, '41', 60)
      expect(await cache.incr(existing)).toBe(42)
      expect(await cache.get(existing)).toBe('42')
      // incr keeps the key's expiry.
      const remaining = await cache.ttl(existing)
      expect(remaining).toBeGreaterThanOrEqual(1)
      expect(remaining).toBeLessThanOrEqual(60)
    })

    test('incr refuses a value that is not an integer', async () => {
      const k = key('incr')
      await cache.set(k, 'not a number')
      await expect(cache.incr(k)).rejects.toThrow()
      expect(await cache.get(k)).toBe('not a number')
    })

    test('listPush appends, trims to maxLength and sets the expiry', async () => {
      const k = key('list')
      await cache.listPush(k, ['a', 'b'], 3, 60)
      expect(await cache.listAll(k)).toEqual(['a', 'b'])
      const first = await cache.ttl(k)
      expect(first).toBeGreaterThanOrEqual(1)
      expect(first).toBeLessThanOrEqual(60)

      await cache.listPush(k, ['c', 'd'], 3, 600)
      expect(await cache.listAll(k)).toEqual(['b', 'c', 'd'])
      // Each push renews the expiry with its own ttl.
      expect(await cache.ttl(k)).toBeGreaterThan(60)

      await cache.listPush(k, ['e', 'f', 'g', 'h'], 2, 600)
      expect(await cache.listAll(k)).toEqual(['g', 'h'])

      await cache.listPush(k, [], 2, 600)
      expect(await cache.listAll(k)).toEqual(['g', 'h'])
    })

    test('listPush on an absent key with nothing to push creates nothing', async () => {
      const k = key('list')
      await cache.listPush(k, [], 5, 60)
      expect(await cache.ttl(k)).toBe(-2)
      expect(await cache.listAll(k)).toEqual([])
    })

    test('listPushIfPresent pushes, trims and renews the expiry only on a list that exists', async () => {
      const absent = key('list')
      expect(await cache.listPushIfPresent(absent, ['a'], 5, 60)).toBe(false)
      expect(await cache.ttl(absent)).toBe(-2)
      expect(await cache.listAll(absent)).toEqual([])

      const k = key('list')
      await cache.listPush(k, ['a', 'b'], 3, 60)
      expect(await cache.listPushIfPresent(k, ['c', 'd'], 3, 600)).toBe(true)
      expect(await cache.listAll(k)).toEqual(['b', 'c', 'd'])
      expect(await cache.ttl(k)).toBeGreaterThan(60)

      // Nothing to push changes nothing, present or not.
      expect(await cache.listPushIfPresent(k, [], 3, 1)).toBe(false)
      expect(await cache.listAll(k)).toEqual(['b', 'c', 'd'])
      expect(await cache.ttl(k)).toBeGreaterThan(60)

      // A list deleted in between stays deleted.
      await cache.del(k)
      expect(await cache.listPushIfPresent(k, ['e'], 3, 60)).toBe(false)
      expect(await cache.listAll(k)).toEqual([])
    })

    test('listReplace replaces the whole list and sets the expiry; [] deletes it', async () => {
      const k = key('list')
      await cache.listPush(k, ['a', 'b', 'c'], 10, 60)
      await cache.listReplace(k, ['x', 'y'], 600)
      expect(await cache.listAll(k)).toEqual(['x', 'y'])
      const remaining = await cache.ttl(k)
      expect(remaining).toBeGreaterThan(60)
      expect(remaining).toBeLessThanOrEqual(600)

      await cache.listReplace(k, [], 600)
      expect(await cache.listAll(k)).toEqual([])
      expect(await cache.ttl(k)).toBe(-2)

      const fresh = key('list')
      await cache.listReplace(fresh, ['only'], 60)
      expect(await cache.listAll(fresh)).toEqual(['only'])
    })

    test('listAll on an absent key is an empty list', async () => {
      expect(await cache.listAll(key('absent'))).toEqual([])
    })

    test('list values keep their order and exact text', async () => {
      const k = key('list')
      const values = ['{"role":"user","content":"hi"}', '', 'ünïcode ✓', 'line\nbreak']
      await cache.listPush(k, values, 20, 60)
      expect(await cache.listAll(k)).toEqual(values)
    })

    test('a string operation on a list (and the reverse) fails with WRONGTYPE', async () => {
      const list = key('wrong')
      const str = key('wrong')
      await cache.listPush(list, ['a'], 5, 60)
      await cache.set(str, 'v')
      await expect(cache.get(list)).rejects.toThrow(/WRONGTYPE/)
      await expect(cache.incr(list)).rejects.toThrow(/WRONGTYPE/)
      await expect(cache.listAll(str)).rejects.toThrow(/WRONGTYPE/)
      await expect(cache.listPush(str, ['b'], 5, 60)).rejects.toThrow(/WRONGTYPE/)
      await expect(cache.listPushIfPresent(str, ['b'], 5, 60)).rejects.toThrow(/WRONGTYPE/)
      expect(await cache.get(str)).toBe('v')
      // The failed push changed nothing, not even the expiry.
      expect(await cache.ttl(str)).toBe(-1)
      expect(await cache.listAll(list)).toEqual(['a'])
      // set replaces whatever the key held.
      await cache.set(list, 'now a string')
      expect(await cache.get(list)).toBe('now a string')
    })

    test('flush removes every key this cache holds, and only those', async () => {
      const own = await backend.open()
      const other = await backend.open()
      try {
        const str = key('flush')
        const list = key('flush')
        const counter = key('flush')
        const survivor = key('flush')
        await own.set(str, 'v', 60)
        await own.listPush(list, ['a'], 5, 60)
        await own.incr(counter)
        await other.set(survivor, 'kept')

        await own.flush()

        expect(await own.get(str)).toBeNull()
        expect(await own.ttl(str)).toBe(-2)
        expect(await own.listAll(list)).toEqual([])
        expect(await own.get(counter)).toBeNull()
        expect(await other.get(survivor)).toBe('kept')
        // The cache still works after a flush.
        await own.set(str, 'again')
        expect(await own.get(str)).toBe('again')
      } finally {
        await own.flush()
        await other.flush()
        await own.close()
        await other.close()
      }
    })

    test('ping resolves while the cache answers', async () => {
      await expect(cache.ping()).resolves.toBeUndefined()
    })
  })
}
