// What only the in-process cache adapter has: an injectable clock, so expiry is
// checked to the millisecond without waiting; WrongTypeError on a string/list
// mix; values copied in and out; close() dropping everything.
import { describe, expect, test } from 'bun:test'
import { FILL_WINDOW_MS } from '../../src/storage/cache.ts'
import { createMemoryCache, WrongTypeError } from '../../src/storage/memory-cache.ts'

function withClock(start = 1_700_000_000_000) {
  let now = start
  const cache = createMemoryCache(() => now)
  return {
    cache,
    advance(ms: number) {
      now += ms
    },
  }
}

describe('memory cache: expiry on an injected clock', () => {
  test('a key lives until exactly its ttl, then is absent', async () => {
    const { cache, advance } = withClock()
    await cache.set('k', 'v', 10)
    advance(9_999)
    expect(await cache.get('k')).toBe('v')
    expect(await cache.ttl('k')).toBe(0)
    advance(1)
    expect(await cache.get('k')).toBeNull()
    expect(await cache.ttl('k')).toBe(-2)
  })

  test('a fill is void once FILL_WINDOW_MS have passed since startFill', async () => {
    const { cache, advance } = withClock()
    const inTime = await cache.startFill('k')
    advance(FILL_WINDOW_MS - 1)
    expect(await cache.fill('k', inTime, 'v', 60)).toBe(true)
    const late = await cache.startFill('k')
    advance(FILL_WINDOW_MS)
    expect(await cache.fill('k', late, 'w', 60)).toBe(false)
    expect(await cache.get('k')).toBe('v')
  })

  test('ttl rounds the remaining time to whole seconds, like Redis', async () => {
    const { cache, advance } = withClock()
    await cache.set('k', 'v', 10)
    expect(await cache.ttl('k')).toBe(10)
    advance(4_400)
    expect(await cache.ttl('k')).toBe(6)
    advance(200)
    expect(await cache.ttl('k')).toBe(5)
  })

  test('a key without a ttl never expires', async () => {
    const { cache, advance } = withClock()
    await cache.set('k', 'v')
    advance(365 * 24 * 3_600_000)
    expect(await cache.get('k')).toBe('v')
    expect(await cache.ttl('k')).toBe(-1)
  })

  test('incr keeps the expiry; an expired counter starts again from 1', async () => {
    const { cache, advance } = withClock()
    await cache.set('n', '7', 10)
    advance(6_000)
    expect(await cache.incr('n')).toBe(8)
    expect(await cache.ttl('n')).toBe(4)
    advance(4_000)
    expect(await cache.incr('n')).toBe(1)
    expect(await cache.ttl('n')).toBe(-1)
  })

  test('each listPush renews the expiry; the list expires as a whole', async () => {
    const { cache, advance } = withClock()
    await cache.listPush('l', ['a'], 10, 10)
    advance(8_000)
    await cache.listPush('l', ['b'], 10, 10)
    advance(8_000)
    expect(await cache.listAll('l')).toEqual(['a', 'b'])
    advance(2_000)
    expect(await cache.listAll('l')).toEqual([])
    expect(await cache.ttl('l')).toBe(-2)
  })

  test('del does not count a key that has already expired', async () => {
    const { cache, advance } = withClock()
    await cache.set('gone', 'v', 1)
    await cache.set('here', 'v')
    advance(1_000)
    expect(await cache.del('gone', 'here')).toBe(1)
  })
})

describe('memory cache: wrong types', () => {
  test('string operations on a list throw WrongTypeError', async () => {
    const cache = createMemoryCache()
    await cache.listPush('l', ['a'], 5, 60)
    await expect(cache.get('l')).rejects.toBeInstanceOf(WrongTypeError)
    await expect(cache.incr('l')).rejects.toBeInstanceOf(WrongTypeError)
    expect(await cache.listAll('l')).toEqual(['a'])
  })

  test('list operations on a string throw WrongTypeError and change nothing', async () => {
    const { cache, advance } = withClock()
    await cache.set('s', 'v')
    await expect(cache.listAll('s')).rejects.toBeInstanceOf(WrongTypeError)
    await expect(cache.listPush('s', ['a'], 5, 1)).rejects.toBeInstanceOf(WrongTypeError)
    advance(5_000)
    expect(await cache.get('s')).toBe('v')
    expect(await cache.ttl('s')).toBe(-1)
  })

  test('WrongTypeError carries the Redis wording', () => {
    const error = new WrongTypeError()
    expect(error).toBeInstanceOf(Error)
    expect(error.message).toStartWith('WRONGTYPE ')
  })

  test('set, listReplace and del work whatever the key held', async () => {
    const cache = createMemoryCache()
    await cache.listPush('k', ['a'], 5, 60)
    await cache.set('k', 'string now')
    expect(await cache.get('k')).toBe('string now')
    await cache.listReplace('k', ['list', 'again'], 60)
    expect(await cache.listAll('k')).toEqual(['list', 'again'])
    expect(await cache.del('k')).toBe(1)
  })
})

describe('memory cache: isolation', () => {
  test('listAll returns a copy and listReplace keeps its own', async () => {
    const cache = createMemoryCache()
    const input = ['a', 'b']
    await cache.listReplace('l', input, 60)
    input.push('pushed by the caller')
    const read = await cache.listAll('l')
    read.push('changed by the reader')
    expect(await cache.listAll('l')).toEqual(['a', 'b'])
  })

  test('two caches share nothing', async () => {
    const one = createMemoryCache()
    const two = createMemoryCache()
    await one.set('k', 'one')
    expect(await two.get('k')).toBeNull()
    await two.flush()
    expect(await one.get('k')).toBe('one')
  })

  test('close drops every key', async () => {
    const cache = createMemoryCache()
    await cache.set('k', 'v')
    await cache.listPush('l', ['a'], 5, 60)
    await cache.close()
    expect(await cache.get('k')).toBeNull()
    expect(await cache.listAll('l')).toEqual([])
  })

  test('kind is memory and ping resolves', async () => {
    const cache = createMemoryCache()
    expect(cache.kind).toBe('memory')
    await expect(cache.ping()).resolves.toBeUndefined()
  })
})
