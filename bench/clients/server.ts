// One minimal server of the Redis client comparison (compare.ts): an Elysia
// route answering GET /h with a ~2 KB value, from (CLIENT) ioredis or Bun's
// RedisClient through the Cache adapters, from the near cache, or from a
// constant (`bare`). Prints its port once listening.
import { Elysia } from 'elysia'
import type { Cache } from '../../src/storage/cache.ts'
import { createNearCache } from '../../src/storage/near-cache.ts'
import { createRedisCache } from '../../src/storage/redis-cache.ts'
import { openRedisInvalidations } from '../../src/storage/redis-invalidations.ts'
import { createBunRedisCache } from './bun-redis-cache.ts'

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const key = process.env.BENCH_KEY ?? 'bench:clients:value'
const kind = process.env.CLIENT ?? 'bare'
const value = process.env.BENCH_VALUE ?? ''

function open(): Cache | undefined {
  if (kind === 'ioredis') return createRedisCache(url)
  if (kind === 'bun') return createBunRedisCache(url)
  if (kind === 'near')
    return createNearCache(
      createRedisCache(url),
      openRedisInvalidations(url, { prefixes: [key] }),
      { maxBytes: 2 ** 24, isNear: () => true },
    )
  return undefined
}

const cache = open()
const headers = { 'content-type': 'application/json' }
const app = new Elysia().get('/h', async () => {
  const body = cache ? await cache.get(key) : value
  return new Response(body, { headers })
})
app.listen({ port: 0, hostname: '127.0.0.1' })
console.log(String(app.server?.port))
