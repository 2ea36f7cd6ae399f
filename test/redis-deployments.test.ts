// The service on the Redis deployments besides one server (CONTRACT §18), on
// private ones the test starts (support/redis-deployments.ts) and real server
// processes on Postgres:
// - a Redis Cluster of 3 masters with a replica each: the multi-instance
//   essentials (resume across instances, order across them, stop across
//   them, kill -9 takeover), then the master holding the logs of streaming
//   turns is killed and its replica promoted;
// - a primary and a replica watched by 3 Sentinels: resume and stop across
//   instances, then the primary is killed mid-stream and Sentinel fails over;
// - the same, secured as managed services are: a Cluster whose nodes ask for a
//   password and speak TLS only (a private CA), and a Sentinel deployment
//   whose data nodes and Sentinels each ask for a password.
// Through either failover every turn streams on (support/failover-turns.ts):
// no stored reply lost, every item once (the live stream, another instance
// following it through the failover, and a resume from 0 are the same
// bytes), a request meanwhile answered within the bound (503 at worst), and
// sends work on the new primary. Each failover runs several times, the killed
// node restarted as a replica in between. Needs TEST_DATABASE_URL; skips
// where redis-server or redis-cli is missing.
import { expect, test } from 'bun:test'
import Redis from 'ioredis'
import { turnLogKeys } from '../src/storage/keyspace.ts'
import { slotOf } from '../src/storage/redis-slots.ts'
import { failoverInstanceEnv, streamThroughFailover } from './support/failover-turns.ts'
import { describeInstances, type Instances } from './support/multi-instance-suite.ts'
import {
  type PrivateCluster,
  type PrivateSentinels,
  REDIS_DEPLOYMENTS_MISSING,
  type RedisNode,
  startCluster,
  startSentinels,
  until,
} from './support/redis-deployments.ts'
import { type Server, send, startReadyServer } from './support/server-process.ts'
import { makeTestTls, type TestTls, TLS_MISSING } from './support/test-tls.ts'

/**
 * Each failover runs this many times, the failed node back as a replica in
 * between: the failures it guards against came in about half the runs (issue #29).
 */
const FAILOVER_RUNS = 3

/**
 * The instance the failover turns run on (failover-turns.ts), started on the
 * first run and kept across the runs: one that lived through a failover
 * rides through the next.
 */
function failoverInstance(instances: () => Instances) {
  let server: Promise<Server> | undefined
  return () => {
    server ??= startReadyServer(failoverInstanceEnv(instances().env))
    return server
  }
}

/** The master serving the slots of most of these turns' logs. */
async function busiestMaster(cluster: PrivateCluster, messageIds: string[]): Promise<RedisNode> {
  const holders = await Promise.all(
    messageIds.map((id) => cluster.masterOf(slotOf(turnLogKeys('', id).stream))),
  )
  const count = (node: RedisNode) => holders.filter((holder) => holder === node).length
  return holders.reduce((most, node) => (count(node) > count(most) ? node : most))
}

let cluster: PrivateCluster | undefined
describeInstances(
  {
    name: 'a Redis Cluster',
    missing: REDIS_DEPLOYMENTS_MISSING,
    async start() {
      cluster = await startCluster(3, 1)
      return { REDIS_CLUSTER_NODES: cluster.spec }
    },
    stop: async () => cluster?.stop(),
  },
  {
    scenarios: ['resume', 'order', 'stop', 'kill'],
    more(instances) {
      test('says so when it runs without a near cache; counts a user under their hash tag', async () => {
        const { a, user } = instances()
        expect(a.stdout()).toContain('"redis":"cluster"')
        expect(a.stdout()).toContain('"nearCache":"off on Redis Cluster"')
        const userId = user()
        expect(await (await send(a.base, userId, 'hello')).text()).toEndWith('data: [DONE]\n\n')
        const key = `conduit:s:ratelimit:sends:{${userId}}`
        const master = await (cluster as PrivateCluster).masterOf(slotOf(key))
        expect(await master.admin.exists(key)).toBe(1)
      }, 30_000)

      const streamer = failoverInstance(instances)
      for (let run = 1; run <= FAILOVER_RUNS; run++)
        test(`the master holding streaming turns' logs is killed, run ${run}: its replica takes over, every turn streams on`, async () => {
          const running = cluster as PrivateCluster
          let rejoined: Promise<void> | undefined
          try {
            await streamThroughFailover(instances(), await streamer(), async (messageIds) => {
              const killed = await busiestMaster(running, messageIds)
              await killed.kill()
              await running.healthy(30_000)
              // Back as a replica of the master that took its slots over,
              // while the turns stream on: whole again for the next run.
              rejoined = running.rejoin(killed)
              rejoined.catch(() => {})
            })
          } finally {
            await rejoined
          }
          // Three masters again, the killed node back among the replicas.
          expect(await running.masters(), await running.view()).toHaveLength(3)
        }, 90_000)
    },
  },
)

let sentinels: PrivateSentinels | undefined
describeInstances(
  {
    name: 'Redis behind Sentinel',
    missing: REDIS_DEPLOYMENTS_MISSING,
    async start() {
      sentinels = await startSentinels()
      return { REDIS_SENTINELS: sentinels.spec, REDIS_SENTINEL_NAME: sentinels.name }
    },
    stop: async () => sentinels?.stop(),
  },
  {
    scenarios: ['resume', 'stop'],
    more(instances) {
      const streamer = failoverInstance(instances)
      for (let run = 1; run <= FAILOVER_RUNS; run++)
        test(`the primary is killed mid-stream, run ${run}: Sentinel promotes the replica, every turn streams on`, async () => {
          const watched = sentinels as PrivateSentinels
          const killed = await watched.primaryNow()
          let rejoined: Promise<void> | undefined
          try {
            await streamThroughFailover(instances(), await streamer(), async () => {
              await killed.kill()
              await until(
                async () => {
                  const agreed = await watched.agreedPrimary()
                  return agreed !== undefined && agreed !== killed
                },
                'every Sentinel names the promoted replica',
                30_000,
              )
              // Back as a replica of the new primary, while the turns stream
              // on: whole again for the next run.
              rejoined = watched.rejoin(killed)
              rejoined.catch(() => {})
            })
          } finally {
            await rejoined
          }
        }, 90_000)
    },
  },
)

/** What a managed service asks for: a password on every node, and TLS under a private CA. */
const PASSWORD = 'conduit-test-password'
let securedCluster: PrivateCluster | undefined
let tls: TestTls | undefined
describeInstances(
  {
    name: 'a Redis Cluster with a password and TLS',
    missing: REDIS_DEPLOYMENTS_MISSING ?? TLS_MISSING,
    async start() {
      tls = makeTestTls()
      securedCluster = await startCluster(3, 0, { password: PASSWORD, tls })
      return {
        REDIS_CLUSTER_NODES: securedCluster.spec,
        REDIS_PASSWORD: PASSWORD,
        REDIS_TLS: 'true',
        REDIS_TLS_CA_FILE: tls.caFile,
      }
    },
    async stop() {
      await securedCluster?.stop()
      tls?.remove()
    },
  },
  {
    scenarios: ['resume', 'stop'],
    more() {
      test('its nodes refuse a client without the password, and plain TCP', async () => {
        const node = (securedCluster as PrivateCluster).nodes[0] as RedisNode
        const ca = (tls as TestTls).caPem
        const once = { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null }
        const refusal = async (client: Redis) => {
          const errors: string[] = []
          client.on('error', (error: Error) => errors.push(error.message))
          try {
            await client.connect().then(() => client.ping())
            return 'answered'
          } catch (error) {
            return [...errors, (error as Error).message].join('; ')
          } finally {
            client.disconnect()
          }
        }
        const noPassword = new Redis({ host: node.host, port: node.port, tls: { ca }, ...once })
        expect(await refusal(noPassword)).toContain('NOAUTH')
        const plain = new Redis({ host: node.host, port: node.port, password: PASSWORD, ...once })
        expect(await refusal(plain)).not.toBe('answered')
        // With both, the node answers: the refusals above were the password and TLS.
        const both = new Redis({
          host: node.host,
          port: node.port,
          password: PASSWORD,
          tls: { ca },
          ...once,
        })
        expect(await both.connect().then(() => both.ping())).toBe('PONG')
        both.disconnect()
      })
    },
  },
)

let securedSentinels: PrivateSentinels | undefined
describeInstances(
  {
    name: 'Redis behind Sentinel, with passwords',
    missing: REDIS_DEPLOYMENTS_MISSING,
    async start() {
      securedSentinels = await startSentinels('secured', {
        password: PASSWORD,
        sentinelPassword: `${PASSWORD}-sentinel`,
      })
      return {
        REDIS_SENTINELS: securedSentinels.spec,
        REDIS_SENTINEL_NAME: securedSentinels.name,
        REDIS_PASSWORD: PASSWORD,
        REDIS_SENTINEL_PASSWORD: `${PASSWORD}-sentinel`,
      }
    },
    stop: async () => securedSentinels?.stop(),
  },
  { scenarios: ['resume'] },
)
