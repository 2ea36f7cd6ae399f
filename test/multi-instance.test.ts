// Two (and three) real server processes on one Postgres and one Redis server,
// no sticky routing (CONTRACT §12-§13): every multi-instance scenario of
// support/multi-instance-suite.ts. Needs TEST_DATABASE_URL and TEST_REDIS_URL;
// uses Redis database 14, emptied before and after.
import { createRedisCache } from '../src/storage/redis-cache.ts'
import { TEST_REDIS_URL } from './support/backends.ts'
import { describeInstances } from './support/multi-instance-suite.ts'

/** A Redis database no other test uses: cache and state, told apart by prefix. */
const DATABASE = 14

const redisUrl = () => {
  const url = new URL(TEST_REDIS_URL as string)
  url.pathname = `/${DATABASE}`
  return url.toString()
}

/** Empties the database (no prefix: the whole of it is this test's). */
async function flush() {
  const cache = createRedisCache(redisUrl())
  await cache.flush()
  await cache.close()
}

describeInstances({
  name: 'one Redis server',
  missing: TEST_REDIS_URL ? undefined : 'set TEST_REDIS_URL',
  async start() {
    await flush()
    return { REDIS_URL: redisUrl() }
  },
  stop: flush,
})
