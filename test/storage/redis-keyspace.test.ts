// The Redis keyspace (src/storage/keyspace.ts) and the slots it is built for:
// every key of one conversation shares its slot, a key without a hash tag
// gets one, and a cache flush on a database shared with the state and with
// another application removes the cache's keys (markers included) and
// nothing else. The flush part needs TEST_REDIS_URL.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Redis from 'ioredis'
import { contextKey, historyKey, listKey } from '../../src/conversation/reads/cache-keys.ts'
import {
  cacheKeyOf,
  cacheRedisKey,
  conversationStopChannel,
  leaseKeys,
  prefixPattern,
  rateLimitKey,
  stopFlagKey,
  turnLogBucket,
  turnLogBuckets,
  turnLogKeys,
  unfinishedKey,
} from '../../src/storage/keyspace.ts'
import { createRedisCache } from '../../src/storage/redis-cache.ts'
import { slotOf } from '../../src/storage/redis-slots.ts'
import { TEST_REDIS_URL, uniqueName } from '../support/backends.ts'

describe('keyspace', () => {
  const conversation = '5f0c6f6e-8a3b-4c53-9d0e-2b1a7c9f0e11'

  test("a conversation's keys, under any prefix, all lie in the slot of its id", () => {
    const slot = slotOf(conversation)
    const { lease, wanted, fence } = leaseKeys('conduit:s:', conversation)
    for (const key of [
      cacheRedisKey('conduit:c:', historyKey(conversation)),
      `${cacheRedisKey('conduit:c:', historyKey(conversation))}:fill`,
      cacheRedisKey('app:', contextKey(conversation)),
      lease,
      wanted,
      fence,
      stopFlagKey('conduit:s:', conversation),
      conversationStopChannel('conduit:s:', conversation),
    ])
      expect(slotOf(key)).toBe(slot)
    expect(slotOf(listKey('alice'))).toBe(slotOf(rateLimitKey('alice')))
  })

  test('a key without a hash tag is stored as {key}: its fill marker shares its slot', () => {
    const stored = cacheRedisKey('conduit:c:', 'documents:list')
    expect(stored).toBe('conduit:c:{documents:list}')
    expect(slotOf(`${stored}:fill`)).toBe(slotOf(stored))
    expect(cacheKeyOf('conduit:c:', stored)).toBe('documents:list')
    const tagged = cacheRedisKey('conduit:c:', historyKey(conversation))
    expect(tagged).toBe(`conduit:c:conv:{${conversation}}:history`)
    expect(cacheKeyOf('conduit:c:', tagged)).toBe(historyKey(conversation))
    expect(cacheKeyOf('conduit:c:', 'conduit:s:lease:{x}')).toBeUndefined()
  })

  test("turn logs spread over 256 buckets, each log in the slot of its bucket's index", () => {
    const buckets = new Set<string>()
    // 10,000 random ids leave one of 256 buckets empty with odds of about 1e-15 (2,000: 1 in 10).
    for (let i = 0; i < 10_000; i++) {
      const messageId = crypto.randomUUID()
      const { stream, meta } = turnLogKeys('conduit:s:turnlog:', messageId)
      const bucket = turnLogBucket(messageId)
      buckets.add(bucket)
      expect(stream).toBe(`conduit:s:turnlog:{${bucket}}:${messageId}`)
      expect(slotOf(meta)).toBe(slotOf(stream))
      expect(slotOf(unfinishedKey('conduit:s:turnlog:', bucket))).toBe(slotOf(stream))
    }
    expect(buckets.size).toBe(256)
    expect(new Set(turnLogBuckets())).toEqual(buckets)
    // A message id with braces of its own keeps its bucket's tag.
    const odd = turnLogKeys('p:', '{x}y}')
    expect(slotOf(odd.stream)).toBe(slotOf(`{${turnLogBucket('{x}y}')}}`))
  })

  test('slots match the ones Redis Cluster documents', () => {
    // CLUSTER KEYSLOT's answers (Redis documents the first two; an empty tag hashes the whole key).
    expect(slotOf('somekey')).toBe(11_058)
    expect(slotOf('foo{hash_tag}')).toBe(2_515)
    expect(slotOf('{user1000}.following')).toBe(slotOf('{user1000}.followers'))
    expect(slotOf('foo{}{bar}')).toBe(8_363)
    expect(slotOf('123456789')).toBe(12_739)
  })

  test('a prefix with glob characters matches itself only in SCAN', () => {
    expect(prefixPattern('conduit:c:')).toBe('conduit:c:*')
    expect(prefixPattern('a*b?[c]\\:')).toBe('a\\*b\\?\\[c\\]\\\\:*')
  })
})

describe.skipIf(!TEST_REDIS_URL)('a cache flush on a database it shares', () => {
  let raw: Redis
  const base = uniqueName('shared')
  const cachePrefix = `${base}:c:`
  const statePrefix = `${base}:s:`
  const otherApp = `${base}-other:`

  beforeAll(() => {
    raw = new Redis(TEST_REDIS_URL ?? '')
  })

  afterAll(async () => {
    const keys = await raw.keys(`${base}*`)
    if (keys.length > 0) await raw.del(...keys)
    raw.disconnect()
  })

  test('removes every key under the cache prefix, fill markers included, and nothing else', async () => {
    const cache = createRedisCache(TEST_REDIS_URL ?? '', { keyPrefix: cachePrefix })
    try {
      await cache.set(historyKey('c1'), 'h', 600)
      await cache.set('documents:list', '[]', 600)
      await cache.listPush(listKey('u1'), ['a'], 5, 600)
      await cache.startFill(historyKey('c2'))
      // 1,200 more, so the flush takes several SCAN pages.
      await Promise.all(Array.from({ length: 1_200 }, (_, i) => cache.set(`k:{${i}}`, 'v', 600)))
      await raw.set(`${statePrefix}lease:{c1}`, '1')
      await raw.set(`${otherApp}${historyKey('c1')}`, 'theirs')
      await raw.set(`${base}:cache-but-not-prefix`, 'x')

      await cache.flush()

      expect(await raw.keys(`${cachePrefix}*`)).toEqual([])
      expect(await raw.get(`${statePrefix}lease:{c1}`)).toBe('1')
      expect(await raw.get(`${otherApp}${historyKey('c1')}`)).toBe('theirs')
      expect(await raw.get(`${base}:cache-but-not-prefix`)).toBe('x')
      expect(await cache.get(historyKey('c1'))).toBeNull()
    } finally {
      await cache.close()
    }
  })
})
