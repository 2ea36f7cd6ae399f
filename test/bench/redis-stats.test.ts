// The harness's Redis meter (bench/harness/redis-stats.ts) counts round trips
// as Redis's read events: commands written together arrive in one read, each
// awaited in turn in a read of its own; commands counted apart. Over a real
// Redis (TEST_REDIS_URL); its counters are server-wide, so the bounds leave
// room for another client's few commands.
import { expect, test } from 'bun:test'
import Redis from 'ioredis'
import { meterRedis } from '../../bench/harness/redis-stats.ts'
import { TEST_REDIS_URL, uniqueName } from '../support/backends.ts'

const COMMANDS = 200

test.skipIf(!TEST_REDIS_URL)(
  'a pipeline is one round trip, awaited commands one each; both count every command',
  async () => {
    const url = TEST_REDIS_URL as string
    const redis = new Redis(url)
    const key = uniqueName('meter')
    try {
      await redis.ping()
      const pipelined = await meterRedis(url)
      const pipeline = redis.pipeline()
      for (let i = 0; i < COMMANDS; i++) pipeline.incr(key)
      await pipeline.exec()
      const together = await pipelined.stop()

      const awaited = await meterRedis(url)
      for (let i = 0; i < COMMANDS; i++) await redis.incr(key)
      const apart = await awaited.stop()

      expect(together?.totalCommands).toBeGreaterThanOrEqual(COMMANDS)
      expect(apart?.totalCommands).toBeGreaterThanOrEqual(COMMANDS)
      expect(together?.readEvents).toBeLessThan(COMMANDS / 10)
      expect(apart?.readEvents).toBeGreaterThanOrEqual(COMMANDS)
      expect(await redis.get(key)).toBe(String(2 * COMMANDS))
    } finally {
      await redis.del(key)
      redis.disconnect()
    }
  },
)
