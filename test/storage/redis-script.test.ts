// Scripts sent by SHA1 (src/storage/redis-script.ts) on real Redis
// (TEST_REDIS_URL): they run when Redis has lost them, and a script that ran
// and failed is never run a second time.
import { afterAll, expect, spyOn, test } from 'bun:test'
import Redis from 'ioredis'
import { isNoScript, redisScript } from '../../src/storage/redis-script.ts'
import { TEST_REDIS_URL, uniqueName } from '../support/backends.ts'

if (TEST_REDIS_URL) {
  const redis = new Redis(TEST_REDIS_URL)
  const key = uniqueName('redis-script')
  afterAll(async () => {
    await redis.del(key)
    await redis.quit()
  })

  const increment = redisScript("return redis.call('INCRBY', KEYS[1], ARGV[1])")

  test('a script runs by its SHA1, and again after Redis lost it (SCRIPT FLUSH)', async () => {
    const evals = spyOn(redis, 'eval')
    try {
      await redis.script('FLUSH')
      expect(await increment.run(redis, [key], [2])).toBe(2)
      expect(evals).toHaveBeenCalledTimes(1)
      // Loaded by that EVAL: the next call goes by SHA1 alone.
      expect(await increment.run(redis, [key], [3])).toBe(5)
      expect(evals).toHaveBeenCalledTimes(1)
      await redis.script('FLUSH')
      expect(await increment.run(redis, [key], [1])).toBe(6)
      expect(evals).toHaveBeenCalledTimes(2)
    } finally {
      evals.mockRestore()
    }
  })

  test('a script that ran and failed is not run again', async () => {
    await redis.set(key, '0')
    const failing = redisScript(
      `redis.call('INCR', KEYS[1]) return redis.error_reply('${uniqueName('boom')}')`,
    )
    await expect(failing.run(redis, [key], [])).rejects.toThrow(/boom/)
    expect(await redis.get(key)).toBe('1')
    await expect(failing.run(redis, [key], [])).rejects.toThrow(/boom/)
    expect(await redis.get(key)).toBe('2')
  })

  test('isNoScript names only the NOSCRIPT reply', async () => {
    const missing = await redis.evalsha('0'.repeat(40), 0).catch((error: unknown) => error)
    expect(isNoScript(missing)).toBe(true)
    expect(isNoScript(new Error('ERR boom'))).toBe(false)
    expect(isNoScript('NOSCRIPT')).toBe(false)
  })
}
