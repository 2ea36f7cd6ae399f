// Write coalescing of ioredis clients (src/storage/redis-write-coalescing.ts)
// on real Redis (TEST_REDIS_URL): the commands of one event-loop turn reach the socket's
// transport as one write, their replies are each command's own, and a client
// that reconnected coalesces on its new socket too. Writes are counted at the
// socket's _write / _writev, under which Bun sends one sendto each.
import { afterAll, expect, test } from 'bun:test'
import type { Socket } from 'node:net'
import Redis from 'ioredis'
import { coalesceWritesPerLoopTurn } from '../../src/storage/redis-write-coalescing.ts'
import { TEST_REDIS_URL, uniqueName } from '../support/backends.ts'

/** Counts the writes `socket` hands its transport from now on (a writev is one). */
function transportWrites(socket: Socket): () => number {
  const internals = socket as unknown as Record<'_write' | '_writev', (...args: unknown[]) => void>
  const write = internals._write
  const writev = internals._writev
  let count = 0
  let inWritev = false
  internals._write = function (this: unknown, ...args: unknown[]) {
    if (!inWritev) count++
    return write.apply(this, args)
  }
  internals._writev = function (this: unknown, ...args: unknown[]) {
    count++
    inWritev = true
    try {
      return writev.apply(this, args)
    } finally {
      inWritev = false
    }
  }
  return () => count
}

const streamOf = (redis: Redis) => redis.stream as Socket

if (TEST_REDIS_URL) {
  const key = uniqueName('coalescing')
  const clients: Redis[] = []
  const client = async (coalesce: boolean) => {
    const redis = new Redis(TEST_REDIS_URL as string)
    clients.push(redis)
    if (coalesce) coalesceWritesPerLoopTurn(redis)
    await redis.ping()
    return redis
  }
  afterAll(async () => {
    await clients[0]?.del(key)
    for (const redis of clients) redis.disconnect()
  })

  test('without it, every command is a write of its own', async () => {
    const redis = await client(false)
    const writes = transportWrites(streamOf(redis))
    await Promise.all([redis.set(key, '1'), redis.incr(key), redis.get(key)])
    expect(writes()).toBe(3)
  })

  test('commands issued in one loop turn are one write, each with its own reply', async () => {
    const redis = await client(true)
    const writes = transportWrites(streamOf(redis))
    const replies = await Promise.all([
      redis.set(key, '1'),
      redis.incr(key),
      redis.get(key),
      redis.hget(key, 'field').catch((error: Error) => error.message),
      redis.get(key),
    ])
    expect(replies).toEqual(['OK', 2, '2', expect.stringContaining('WRONGTYPE'), '2'])
    expect(writes()).toBe(1)
    // A command of a later turn is a write of its own, not held back.
    expect(await redis.incr(key)).toBe(3)
    expect(writes()).toBe(2)
  })

  test('a client that reconnected coalesces on its new socket', async () => {
    const redis = await client(true)
    const first = streamOf(redis)
    const reconnected = new Promise((resolve) => redis.once('ready', resolve))
    redis.disconnect(true)
    await reconnected
    expect(streamOf(redis)).not.toBe(first)
    const writes = transportWrites(streamOf(redis))
    expect(await Promise.all([redis.set(key, '5'), redis.incr(key)])).toEqual(['OK', 6])
    expect(writes()).toBe(1)
  })
}
