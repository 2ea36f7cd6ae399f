// CONTRACT §19 with the default deployment's Redis (cache, turn state and
// rate limits on one private redis-server) killed (then restarted empty, or
// not at all), frozen or flushed under
// running turns, the servers real processes: one on the embedded database,
// and two sharing a real Postgres (each running the turns of the sends it
// accepted, each sweeping for the other's). Every stream that answered 200
// ends with its last items, an error item (if any) names the turn state, and
// the stored reply is exactly what was streamed. The instance running a turn
// keeps its reply and writes the log back once Redis answers again
// (reply-log.ts, log-restore.ts); its readers wait for it (stream-reader.ts);
// the other instance does not take the turn over while its runner lives (the
// row's heartbeat). Each fault runs more than once: the failures this guards
// against hit about half the runs.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { GAVE_UP_MESSAGE } from '../../src/state/turn-log/redis-log-batcher.ts'
import type { Db } from '../../src/storage/db.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { TEST_DATABASE_URL, uniqueName } from '../support/backends.ts'
import { type PrivateRedis, privateRedis, REDIS_SERVER } from '../support/redis-server.ts'
import {
  killAllServers,
  type Server,
  send,
  sleep,
  startReadyServer,
} from '../support/server-process.ts'
import { auditSends, type RunningSend, startSend } from '../support/turn-audit.ts'

const RUNS = 2

/**
 * What a runner logs when its log writes gave up and it writes the log back:
 * mid-turn (reply-log.ts), or as the stream ended (lifecycle.ts).
 */
const WRITTEN_BACK = /the turn state failed (mid-turn|as the stream ended); the log is written back/

/**
 * The freezes, each past the turn lease (10 s: the lease expires in Redis
 * meanwhile; the runner keeps its turn by its row's heartbeat). A batch of log
 * writes is sent again for 15 s, each try waiting the state's 2 s deadline
 * (redis-log-batcher.ts): a 15 s freeze (the issue's) ends about when those
 * tries do, so the writes may ride through or give up, run by run. The other
 * lasts until every instance has said its writes gave up (however late a
 * busy machine started their tries), and at least 21 s: then each runner
 * writes its log back once Redis answers (reply-log.ts, log-restore.ts),
 * which its log says.
 */
const FREEZES = [
  { name: '15 s', ms: 15_000, untilGaveUp: false },
  { name: 'past the writes giving up', ms: 21_000, untilGaveUp: true },
] as const

/** The longest the writes may take to give up, their tries started late: the test's bound. */
const GIVE_UP_WITHIN_MS = 45_000

interface Deployment {
  name: string
  /** The database settings of every instance; and what to drop afterwards. */
  database(): Promise<{ env: Record<string, string>; drop(): Promise<void> }>
  instances: number
}

const DEPLOYMENTS: Deployment[] = [
  {
    name: 'one instance, embedded database',
    instances: 1,
    database: async () => ({ env: {}, drop: async () => {} }),
  },
  ...(TEST_DATABASE_URL
    ? [
        {
          name: 'two instances on one Postgres',
          instances: 2,
          async database() {
            const url = TEST_DATABASE_URL as string
            const schema = uniqueName('redisfaults')
            const admin: Db = createPostgresDb(url, { max: 1 })
            await admin.exec(`CREATE SCHEMA ${schema}`)
            const db = createPostgresDb(url, { schema, max: 1 })
            await migrate(db)
            await db.close()
            const databaseUrl = new URL(url)
            databaseUrl.searchParams.set('search_path', `${schema},public`)
            return {
              env: { DATABASE_URL: databaseUrl.toString() },
              async drop() {
                await admin.exec(`DROP SCHEMA ${schema} CASCADE`)
                await admin.close()
              },
            }
          },
        },
      ]
    : []),
]

for (const deployment of DEPLOYMENTS)
  describe.skipIf(!REDIS_SERVER)(`Redis faults under running turns, ${deployment.name}`, () => {
    let redis: PrivateRedis
    let servers: Server[] = []
    let drop = async () => {}

    beforeAll(async () => {
      redis = privateRedis()
      await redis.start()
      const database = await deployment.database()
      drop = database.drop
      servers = await Promise.all(
        Array.from({ length: deployment.instances }, () =>
          startReadyServer({
            ...database.env,
            REDIS_URL: redis.url,
            LOCAL_MODEL_CHUNK_DELAY_MS: '40',
          }),
        ),
      )
    }, 60_000)
    afterAll(async () => {
      await killAllServers()
      await redis?.stop()
      await drop()
    }, 30_000)

    /**
     * Each instance takes a send again, read to its end: after the previous
     * fault its turn state may refuse for a moment more (its breaker closes
     * at its next probe), which is not what the next fault tests.
     */
    async function acceptingSends(): Promise<void> {
      for (const server of servers) {
        const deadline = Date.now() + 30_000
        for (;;) {
          const response = await send(server.base, `ready-${crypto.randomUUID()}`, 'Ready?')
          const body = await response.text()
          if (response.status === 200 && body.includes('data: [DONE]')) break
          if (Date.now() > deadline)
            throw new Error(`${server.base} takes no send: ${response.status} ${body}`)
          await sleep(200)
        }
      }
    }

    /** Three sends spread over the instances; each is read and audited where it was sent. */
    async function sendsOverInstances(tag: string): Promise<RunningSend[]> {
      await acceptingSends()
      const started = await Promise.all(
        [0, 1, 2].map((index) =>
          startSend(
            (servers[index % servers.length] as Server).base,
            `${tag}-${index}-${crypto.randomUUID().slice(0, 8)}`,
          ),
        ),
      )
      expect(started.map((sent) => sent.status)).toEqual([200, 200, 200])
      return started
    }

    for (let run = 1; run <= RUNS; run++)
      test(`killed (-9) and restarted empty mid-turn, run ${run}: stored = streamed, every stream ends`, async () => {
        const started = await sendsOverInstances(`killed-${run}`)
        await redis.kill()
        await sleep(500)
        await redis.start()
        await auditSends(started, 'state_unavailable')
      }, 120_000)

    for (let run = 1; run <= RUNS; run++)
      test(`FLUSHALL every 300 ms mid-turn, run ${run}: stored = streamed, every stream ends`, async () => {
        const started = await sendsOverInstances(`flushed-${run}`)
        for (let flush = 0; flush < 10; flush++) {
          await redis.admin.flushall()
          await sleep(300)
        }
        await auditSends(started, 'state_unavailable')
      }, 120_000)

    test('killed (-9) mid-turn and not restarted: every stream ends, stored = streamed', async () => {
      const started = await sendsOverInstances('killed-for-good')
      await redis.kill()
      try {
        await auditSends(started, 'state_unavailable')
      } finally {
        await redis.start()
      }
    }, 180_000)

    for (const freeze of FREEZES)
      test(`frozen (SIGSTOP) ${freeze.name} mid-turn, then thawed: stored = streamed, every stream ends`, async () => {
        const started = await sendsOverInstances(`frozen-${freeze.ms}`)
        const logged = servers.map((server) => server.stdout().length)
        const since = (server: Server, index: number) => server.stdout().slice(logged[index])
        redis.freeze()
        const gaveUp = freeze.untilGaveUp
          ? Promise.all(
              servers.map((server, index) =>
                server.stdoutUntil(
                  (text) => text.slice(logged[index]).includes(GAVE_UP_MESSAGE),
                  GIVE_UP_WITHIN_MS,
                ),
              ),
            )
          : undefined
        await Promise.all([sleep(freeze.ms), gaveUp])
        redis.thaw()
        await auditSends(started, 'state_unavailable')
        if (freeze.untilGaveUp) {
          // Awaited, not read off: a log line leaves in its batch up to 20 ms
          // after it is logged (log-destination.ts), later than [DONE] can.
          const writtenBack = await Promise.all(
            servers.map((server, index) =>
              server
                .stdoutUntil((text) => WRITTEN_BACK.test(text.slice(logged[index])), 10_000)
                .then(
                  () => true,
                  () => false,
                ),
            ),
          )
          // Each instance's warnings since the freeze ride along: a failure shows what it logged instead.
          const seen = servers.map((server, index) => ({
            writtenBack: writtenBack[index],
            warnings: since(server, index)
              .split('\n')
              .filter((line) => line.includes('"level":"warn"')),
          }))
          expect(seen).toEqual(
            servers.map(() => ({ writtenBack: true, warnings: expect.any(Array) })),
          )
        }
      }, 120_000)
  })
