// The service on the Redis deployments besides one server (CONTRACT §18), on
// private ones the test starts (support/redis-deployments.ts) and real server
// processes on Postgres:
// - a Redis Cluster of 3 masters with a replica each: the multi-instance
//   essentials (resume across instances, order across them, stop across
//   them, kill -9 takeover), then the master holding a streaming turn's log is
//   killed and its replica promoted;
// - a primary and a replica watched by 3 Sentinels: resume and stop across
//   instances, then the primary is killed mid-stream and Sentinel fails over;
// - the same, secured as managed services are: a Cluster whose nodes ask for a
//   password and speak TLS only (a private CA), and a Sentinel deployment
//   whose data nodes and Sentinels each ask for a password.
// Through either failover the turn streams on: no stored reply lost, every
// item once (the live stream, another instance following it through the
// failover, and a resume from 0 are the same bytes), a
// request meanwhile answered within the bound (503 at worst), and sends work
// on the new primary. Needs TEST_DATABASE_URL; skips where redis-server or
// redis-cli is missing.
import { expect, test } from 'bun:test'
import Redis from 'ioredis'
import { localReply } from '../src/conversation/model/local.ts'
import { slotOf } from '../src/storage/redis-slots.ts'
import { describeInstances, type Instances, LONG } from './support/multi-instance-suite.ts'
import {
  type PrivateCluster,
  type PrivateSentinels,
  REDIS_DEPLOYMENTS_MISSING,
  type RedisNode,
  startCluster,
  startSentinels,
  until,
} from './support/redis-deployments.ts'
import {
  appendedChunks,
  dataItems,
  reading,
  send,
  startReadyServer,
} from './support/server-process.ts'
import { completeFrames, frameData } from './support/sse-frames.ts'
import { makeTestTls, type TestTls, TLS_MISSING } from './support/test-tls.ts'

/** Longest a request may take while Redis fails over: the state's 2 s deadline, and some. */
const REQUEST_BOUND_MS = 3_500

/**
 * A turn streams from its own instance while `fail` takes Redis (or the part
 * of it holding the turn's log) away and brings a replica in: the turn rides
 * through, every item once, and the deployment serves sends afterwards.
 */
async function streamsThroughFailover(
  instances: Instances,
  fail: (messageId: string) => Promise<void>,
) {
  const { env, b, user, headers, resume, history } = instances
  // A lease longer than the failover, so the turn rides through it rather
  // than being taken over; chunks slow enough to stream all along.
  const c = await startReadyServer({
    ...env,
    TURN_LEASE_MS: '10000',
    LOCAL_MODEL_CHUNK_DELAY_MS: '150',
  })
  const userId = user()
  const stream = reading(await send(c.base, userId, LONG))
  await stream.until((text) => appendedChunks(completeFrames(text).join('')).length >= 3)
  const frames = completeFrames(stream.text())
  const { token, conversation_id: conversationId } = frameData<{
    token: string
    conversation_id: string
  }>(frames[1])
  const added = dataItems(frames.join('')).find((item) => item.o === 'add') as {
    v: { message: { id: string } }
  }
  // Another instance follows the turn from Redis through the failover.
  const following = await resume(b, token, conversationId, frames.length)
  expect(following.status).toBe(200)
  const failing = fail(added.v.message.id)

  // Meanwhile a request that needs the state answers, at worst with a 503, never hangs.
  const asked = Date.now()
  const status = await fetch(`${b.base}/backend-api/conversation/${conversationId}/stream_status`, {
    headers: headers(userId),
  })
  await status.arrayBuffer()
  expect(Date.now() - asked).toBeLessThan(REQUEST_BOUND_MS)
  expect([200, 503]).toContain(status.status)

  await failing
  const body = await stream.until(() => false)
  expect(body).toEndWith('data: [DONE]\n\n')
  expect(body).toContain('"finish_details":{"type":"stop"}')
  expect(body).not.toContain('"type":"error"')
  const reply = appendedChunks(body).join('')
  expect(reply).toBe(localReply([{ role: 'user', content: LONG }]))
  // Every item once: what the follower got, and a resume from 0 on another instance, are the same bytes.
  const followed = await following.text()
  expect(frames.join('') + followed).toBe(completeFrames(body).join(''))
  const whole = await (await resume(b, token, conversationId, 0)).text()
  expect(whole).toBe(completeFrames(body).join(''))
  const { messages } = await history(b, userId, conversationId)
  expect(messages[1]?.content.parts[0]).toBe(reply)
  // The new primary takes sends.
  const next = await (
    await send(b.base, userId, 'still there?', { conversation_id: conversationId })
  ).text()
  expect(next).toEndWith('data: [DONE]\n\n')
  expect(next).toContain('"finish_details":{"type":"stop"}')
  c.proc.kill('SIGKILL')
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

      test('the master holding a streaming turn is killed: its replica takes over, the turn streams on', async () => {
        const running = cluster as PrivateCluster
        await streamsThroughFailover(instances(), async (messageId) => {
          // The turn's log lives in the slot of its message id.
          const master = await running.masterOf(slotOf(messageId))
          await master.kill()
          await running.healthy(30_000)
        })
        expect(await running.masters()).toHaveLength(3)
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
      test('the primary is killed mid-stream: Sentinel promotes the replica, the turn streams on', async () => {
        const watched = sentinels as PrivateSentinels
        await streamsThroughFailover(instances(), async () => {
          await watched.primary.kill()
          await until(
            async () => (await watched.primaryPort()) === watched.replica.port,
            'the Sentinels promoted the replica',
            30_000,
          )
        })
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
