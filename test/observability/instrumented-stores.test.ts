// The Cache and Db decorators behind /metrics: cache reads counted as hits and
// misses under a key kind without ids (so labels stay few), and the pool's
// size, connections in use and waiting queries while statements run.
import { describe, expect, test } from 'bun:test'
import { instrumentedCache, keyKind } from '../../src/observability/instrumented-cache.ts'
import { instrumentedDb } from '../../src/observability/instrumented-db.ts'
import { createMetrics } from '../../src/observability/metrics.ts'
import type { Db } from '../../src/storage/db.ts'
import { createMemoryCache } from '../../src/storage/memory-cache.ts'

const valueFor = async (
  metric: { get(): Promise<{ values: { value: number; labels: object }[] }> },
  labels: Record<string, string>,
) =>
  (await metric.get()).values.find((entry) =>
    Object.entries(labels).every(
      ([key, value]) => (entry.labels as Record<string, string>)[key] === value,
    ),
  )?.value ?? 0

describe('keyKind', () => {
  test('drops the ids of the service keys', () => {
    expect(keyKind('conv:5f0c6f6e-8a3b-4c53-9d0e-2b1a7c9f0e11:history')).toBe('conv:history')
    expect(keyKind('user:alice:conversation_list')).toBe('user:conversation_list')
    expect(keyKind('user:a:b:c:conversation_list')).toBe('user:conversation_list')
    expect(keyKind('chat:5f0c6f6e-8a3b-4c53-9d0e-2b1a7c9f0e11:context')).toBe('chat:context')
    expect(keyKind(`doc:${'ab'.repeat(32)}`)).toBe('doc')
    expect(keyKind('documents:list')).toBe('documents:list')
    expect(keyKind('counter:visits')).toBe('counter:visits')
  })
})

describe('instrumentedCache', () => {
  test('counts get and listAll as hits or misses per kind, and passes everything through', async () => {
    const metrics = createMetrics({ processMetrics: false })
    const cache = instrumentedCache(createMemoryCache(), metrics)
    const key = 'conv:5f0c6f6e-8a3b-4c53-9d0e-2b1a7c9f0e11:history'
    expect(await cache.get(key)).toBeNull()
    await cache.set(key, 'v', 60)
    expect(await cache.get(key)).toBe('v')
    expect(await cache.listAll('chat:x:context')).toEqual([])
    await cache.listPush('chat:x:context', ['a'], 20, 60)
    expect(await cache.listAll('chat:x:context')).toEqual(['a'])
    const lookups = metrics.cacheLookups.counter
    expect(await valueFor(lookups, { kind: 'conv:history', result: 'miss' })).toBe(1)
    expect(await valueFor(lookups, { kind: 'conv:history', result: 'hit' })).toBe(1)
    expect(await valueFor(lookups, { kind: 'chat:context', result: 'miss' })).toBe(1)
    expect(await valueFor(lookups, { kind: 'chat:context', result: 'hit' })).toBe(1)
    expect(cache.kind).toBe('memory')
    expect(await cache.incr('n')).toBe(1)
  })
})

describe('instrumentedDb', () => {
  test('reports size, in use and waiting while statements run, and none after', async () => {
    const metrics = createMetrics({ processMetrics: false })
    const releases: (() => void)[] = []
    const held = () => new Promise<never[]>((resolve) => releases.push(() => resolve([])))
    const slow: Db = {
      kind: 'postgres',
      query: () => held(),
      exec: async () => {},
      transaction: async (fn) => fn({ query: () => held(), exec: async () => {} }),
      ping: async () => {},
      close: async () => {},
    }
    const db = instrumentedDb(slow, 2, metrics)
    const running = [db.query('select 1'), db.query('select 2'), db.query('select 3')]
    expect(await valueFor(metrics.dbPool, { state: 'size' })).toBe(2)
    expect(await valueFor(metrics.dbPool, { state: 'in_use' })).toBe(2)
    expect(await valueFor(metrics.dbPool, { state: 'waiting' })).toBe(1)
    for (const release of releases) release()
    await Promise.all(running)
    expect(await valueFor(metrics.dbPool, { state: 'in_use' })).toBe(0)
    expect(await valueFor(metrics.dbPool, { state: 'waiting' })).toBe(0)
  })
})
