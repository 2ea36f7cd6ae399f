// A client of a Sentinel-managed primary (redis-connections.ts) lives through
// a failover whatever it is doing when the Sentinels announce it
// (+switch-master): here it is reconnecting, its question to a Sentinel
// ("which is the primary?") unanswered, because the primary it was connected
// to died and the Sentinel it asks first is frozen. Told of the failover
// meanwhile, ioredis's own failover detector cut that question short and the
// client ended for good: every later command failed with "Connection is
// closed." (issue #29: one instance's turn state stayed unavailable after a
// Sentinel failover, and the turns it followed ended with state_unavailable).
// On private processes the test starts (support/redis-deployments.ts).
import { afterAll, expect, test } from 'bun:test'
import Redis from 'ioredis'
import { duplicateClient, redisConnector } from '../../src/storage/redis-connections.ts'
import {
  type PrivateSentinels,
  REDIS_DEPLOYMENTS_MISSING,
  type RedisNode,
  startSentinels,
  until,
} from '../support/redis-deployments.ts'

let sentinels: PrivateSentinels | undefined
afterAll(async () => sentinels?.stop())

/** Whether a Sentinel has a connection subscribed to something: a client's failover watch. */
async function hasSubscriber(sentinel: RedisNode): Promise<boolean> {
  const clients = (await sentinel.admin.call('CLIENT', 'LIST')) as string
  return clients.split('\n').some((line) => / sub=[1-9]/.test(line))
}

/** The next +switch-master a Sentinel announces: the new primary's address. */
function switchMaster(sentinel: RedisNode) {
  const subscriber = new Redis({ host: sentinel.host, port: sentinel.port, lazyConnect: true })
  subscriber.on('error', () => {})
  const address = new Promise<string[]>((resolve) => {
    subscriber.on('message', (_channel: string, message: string) => {
      // "<name> <old ip> <old port> <new ip> <new port>"
      resolve(message.split(' ').slice(3))
      subscriber.disconnect()
    })
  })
  const subscribed = subscriber.connect().then(() => subscriber.subscribe('+switch-master'))
  return { subscribed, address }
}

test.skipIf(REDIS_DEPLOYMENTS_MISSING !== undefined)(
  'told of a failover while it asks a frozen Sentinel for the primary, the client answers again once it can',
  async () => {
    sentinels = await startSentinels('reconnecting')
    const [first, ...others] = sentinels.sentinels as [RedisNode, ...RedisNode[]]
    const client = redisConnector({
      kind: 'sentinel',
      // The first Sentinel is the one the client asks first, also when it reconnects.
      sentinels: sentinels.sentinels.map(({ host, port }) => ({ host, port })),
      name: sentinels.name,
    }).connect({
      maxRetriesPerRequest: 1,
      connectTimeout: 2_000,
      commandTimeout: 2_000,
      retryStrategy: () => 100,
    })
    client.on('error', () => {})
    // Another connection of the same deployment (a blocking reader, a subscriber).
    const copy = duplicateClient(client)
    copy.on('error', () => {})
    try {
      expect(await client.ping()).toBe('PONG')
      expect(await copy.ping()).toBe('PONG')
      await until(async () => {
        const subscribed = await Promise.all(others.map(hasSubscriber))
        return subscribed.every(Boolean)
      }, 'the client watches the other Sentinels for failovers')

      // The primary dies with the first Sentinel frozen: the client's
      // reconnection waits on that Sentinel while the others fail over and
      // announce it.
      const announced = switchMaster(others[0] as RedisNode)
      await announced.subscribed
      first.freeze()
      await sentinels.primary.kill()
      expect(await announced.address).toEqual(['127.0.0.1', String(sentinels.replica.port)])
      first.thaw()

      for (const connection of [client, copy])
        await until(
          async () => (await connection.ping()) === 'PONG',
          'the client answers again',
          15_000,
        )
      expect((await client.role())[0]).toBe('master')
      expect(await client.set('written', 'after the failover')).toBe('OK')
    } finally {
      first.thaw()
      client.disconnect()
      copy.disconnect()
    }
  },
  60_000,
)
