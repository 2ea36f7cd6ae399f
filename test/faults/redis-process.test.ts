// CONTRACT §19 with the default deployment's Redis (cache, turn state and
// rate limits on one private redis-server) killed, frozen or flushed under
// running turns, the server a real process on the embedded database: every
// stream that answered 200 ends with its last items, an error item (if any)
// names the turn state, and the stored reply is exactly what was streamed.
// The instance running a turn keeps its reply and writes the log back once
// Redis answers again (reply-log.ts, log-restore.ts); its readers wait for it
// (stream-reader.ts). Each fault runs more than once: the failures this
// guards against hit about half the runs.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type PrivateRedis, privateRedis, REDIS_SERVER } from '../support/redis-server.ts'
import { killAllServers, type Server, sleep, startReadyServer } from '../support/server-process.ts'
import { auditSends, startSends } from '../support/turn-audit.ts'

const RUNS = 2

describe.skipIf(!REDIS_SERVER)('Redis faults under running turns (a server process)', () => {
  let redis: PrivateRedis
  let server: Server

  beforeAll(async () => {
    redis = privateRedis()
    await redis.start()
    server = await startReadyServer({
      REDIS_URL: redis.url,
      LOCAL_MODEL_CHUNK_DELAY_MS: '40',
    })
  }, 60_000)
  afterAll(async () => {
    await killAllServers()
    await redis?.stop()
  }, 30_000)

  for (let run = 1; run <= RUNS; run++)
    test(`killed (-9) and restarted empty mid-turn, run ${run}: stored = streamed, every stream ends`, async () => {
      const sends = await startSends(server.base, 3, `killed-${run}`)
      expect(sends.map((sent) => sent.status)).toEqual([200, 200, 200])
      await redis.kill()
      await sleep(500)
      await redis.start()
      await auditSends(server.base, sends, 'state_unavailable')
    }, 120_000)

  for (let run = 1; run <= RUNS; run++)
    test(`FLUSHALL every 300 ms mid-turn, run ${run}: stored = streamed, every stream ends`, async () => {
      const sends = await startSends(server.base, 3, `flushed-${run}`)
      expect(sends.map((sent) => sent.status)).toEqual([200, 200, 200])
      for (let flush = 0; flush < 10; flush++) {
        await redis.admin.flushall()
        await sleep(300)
      }
      await auditSends(server.base, sends, 'state_unavailable')
    }, 120_000)

  test('frozen (SIGSTOP) 5 s mid-turn, then thawed: stored = streamed, every stream ends', async () => {
    const sends = await startSends(server.base, 3, 'frozen')
    expect(sends.map((sent) => sent.status)).toEqual([200, 200, 200])
    redis.freeze()
    await sleep(5_000)
    redis.thaw()
    await auditSends(server.base, sends, 'state_unavailable')
  }, 120_000)
})
