// The ConversationLeases contract, run unchanged over every adapter: memory
// always, Redis when TEST_REDIS_URL is set, and Redis on a private Redis
// Cluster where redis-server is installed. A "peer" is a second instance over
// the same store (on Redis its own connection, as another process would open);
// each open() is a new, empty store, as after a wipe.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Redis from 'ioredis'
import type { ConversationLeases, Lease } from '../../src/state/conversation-leases.ts'
import { createMemoryLeases } from '../../src/state/memory-leases.ts'
import { createRedisLeases } from '../../src/state/redis-leases.ts'
import { primariesOf, type RedisClient } from '../../src/storage/redis-connections.ts'
import { uniqueName } from '../support/backends.ts'
import {
  clusterConnector,
  REDIS_DEPLOYMENTS_MISSING,
  sharedCluster,
} from '../support/redis-deployments.ts'

interface LeaseBackend {
  name: string
  /** An empty lease store; peer() opens another instance over the same leases. */
  open(): Promise<{ store: ConversationLeases; peer(): ConversationLeases }>
}

const clients: RedisClient[] = []
const prefixes: string[] = []

if (REDIS_DEPLOYMENTS_MISSING)
  console.log(`lease-contract: Redis Cluster skipped: ${REDIS_DEPLOYMENTS_MISSING}`)
const cluster = REDIS_DEPLOYMENTS_MISSING ? undefined : await sharedCluster()

function leaseBackends(): LeaseBackend[] {
  // In-process leases are shared by sharing the store: a peer is the same one.
  const memory = (store = createMemoryLeases()) => ({ store, peer: () => store })
  const backends: LeaseBackend[] = [{ name: 'memory', open: async () => memory() }]
  const url = process.env.TEST_REDIS_URL
  if (url)
    backends.push({
      name: 'redis',
      open: async () => {
        const keyPrefix = `${uniqueName('leases')}:`
        prefixes.push(keyPrefix)
        const connect = () => {
          const redis = new Redis(url)
          clients.push(redis)
          return createRedisLeases({ redis, keyPrefix })
        }
        return { store: connect(), peer: connect }
      },
    })
  if (cluster)
    backends.push({
      name: 'redis cluster',
      open: async () => {
        const keyPrefix = `${uniqueName('leases')}:`
        prefixes.push(keyPrefix)
        const connect = () => {
          const redis = clusterConnector(cluster).connect()
          clients.push(redis)
          return createRedisLeases({ redis, keyPrefix })
        }
        return { store: connect(), peer: connect }
      },
    })
  return backends
}

afterAll(async () => {
  // Every client's nodes: the Redis one and the Cluster's.
  const nodes = new Set(clients.flatMap((client) => primariesOf(client)))
  for (const node of nodes)
    for (const prefix of prefixes)
      for (const key of await node.keys(`${prefix}*`)) await node.unlink(key)
  await Promise.all(clients.map((client) => client.quit()))
})

const LONG = 30_000
const SHORT = 100

for (const backend of leaseBackends()) {
  describe(`ConversationLeases contract: ${backend.name}`, () => {
    let leases: ConversationLeases
    let peer: ConversationLeases
    const id = () => uniqueName('conv')
    /** Polls until the lease is gone; fails after 2 s rather than hang. */
    const expire = async (conversationId: string) => {
      const deadline = Date.now() + 2_000
      while (await leases.isHeld(conversationId)) {
        if (Date.now() > deadline) throw new Error(`${conversationId} still held after 2 s`)
        await Bun.sleep(5)
      }
    }

    beforeAll(async () => {
      const space = await backend.open()
      leases = space.store
      peer = space.peer()
    })

    test('acquire takes a free conversation, with a safe-integer token', async () => {
      const conversationId = id()
      expect(await leases.isHeld(conversationId)).toBe(false)
      const lease = await leases.acquire(conversationId, LONG)
      expect(lease?.conversationId).toBe(conversationId)
      expect(Number.isSafeInteger(lease?.token) && (lease?.token ?? 0) > 0).toBe(true)
      expect(await leases.isHeld(conversationId)).toBe(true)
      expect(await peer.isHeld(conversationId)).toBe(true)
    })

    test('a second acquire is refused while the lease is held, from any instance', async () => {
      const conversationId = id()
      expect(await leases.acquire(conversationId, LONG)).toBeDefined()
      expect(await leases.acquire(conversationId, LONG)).toBeUndefined()
      expect(await peer.acquire(conversationId, LONG)).toBeUndefined()
      // Other conversations are unaffected.
      expect(await peer.acquire(id(), LONG)).toBeDefined()
    })

    test('renew keeps a held lease alive past its first expiry', async () => {
      const conversationId = id()
      // 300 ms, so that a busy machine does not lose it before the renew.
      const lease = (await leases.acquire(conversationId, 300)) as Lease
      expect(await leases.renew(lease, LONG)).toBe(true)
      await Bun.sleep(450)
      expect(await leases.isHeld(conversationId)).toBe(true)
      expect(await peer.renew(lease, LONG)).toBe(true)
      expect(await peer.acquire(conversationId, LONG)).toBeUndefined()
    })

    test('renew is false after expiry, and after someone else acquired', async () => {
      const conversationId = id()
      const first = (await leases.acquire(conversationId, SHORT)) as Lease
      await expire(conversationId)
      expect(await leases.renew(first, LONG)).toBe(false)
      // A lost lease is not revived by the failed renew.
      expect(await leases.isHeld(conversationId)).toBe(false)

      const second = (await peer.acquire(conversationId, LONG)) as Lease
      expect(second).toBeDefined()
      expect(await leases.renew(first, LONG)).toBe(false)
      expect(await peer.renew(second, LONG)).toBe(true)
    })

    test('renewals asked for together are each answered for their own grant', async () => {
      const held = (await leases.acquire(id(), LONG)) as Lease
      const released = (await leases.acquire(id(), LONG)) as Lease
      await leases.release(released)
      const stale = (await leases.acquire(id(), SHORT)) as Lease
      await expire(stale.conversationId)
      const taken = (await peer.acquire(stale.conversationId, LONG)) as Lease
      const unknown = { conversationId: id(), token: held.token }
      expect(
        await Promise.all([
          leases.renew(held, LONG),
          leases.renew(released, LONG),
          leases.renew(stale, SHORT),
          leases.renew(unknown, LONG),
          peer.renew(taken, LONG),
        ]),
      ).toEqual([true, false, false, false, true])
      expect(await peer.acquire(held.conversationId, LONG)).toBeUndefined()
    })

    test('release frees the lease for its holder only', async () => {
      const conversationId = id()
      const lease = (await leases.acquire(conversationId, LONG)) as Lease
      await peer.release({ conversationId, token: lease.token + 1 })
      await peer.release({ conversationId: id(), token: lease.token })
      expect(await leases.isHeld(conversationId)).toBe(true)

      await peer.release(lease)
      expect(await leases.isHeld(conversationId)).toBe(false)
      expect(await leases.acquire(conversationId, LONG)).toBeDefined()
    })

    test('release tells whether an acquire was refused while the grant held the lease', async () => {
      const conversationId = id()
      const quiet = (await leases.acquire(conversationId, LONG)) as Lease
      expect(await leases.release(quiet)).toBe(false)

      const wanted = (await leases.acquire(conversationId, LONG)) as Lease
      expect(await peer.acquire(conversationId, LONG)).toBeUndefined()
      expect(await peer.release({ conversationId, token: wanted.token + 1 })).toBe(false)
      expect(await leases.release(wanted)).toBe(true)

      // The mark belongs to the grant that was asked for: the next one starts clean.
      const next = (await peer.acquire(conversationId, LONG)) as Lease
      expect(await peer.release(next)).toBe(false)
      // A refusal against an expired holder's grant does not reach the next grant.
      const stale = (await leases.acquire(conversationId, SHORT)) as Lease
      expect(await peer.acquire(conversationId, LONG)).toBeUndefined()
      await expire(conversationId)
      const fresh = (await peer.acquire(conversationId, LONG)) as Lease
      expect(await leases.release(stale)).toBe(false)
      expect(await peer.release(fresh)).toBe(false)
    })

    test("a stale grant's release leaves the new holder's lease alone", async () => {
      const conversationId = id()
      const stale = (await leases.acquire(conversationId, SHORT)) as Lease
      await expire(conversationId)
      const current = (await peer.acquire(conversationId, LONG)) as Lease
      expect(current.token).toBeGreaterThan(stale.token)

      await leases.release(stale)
      expect(await leases.isHeld(conversationId)).toBe(true)
      expect(await leases.acquire(conversationId, LONG)).toBeUndefined()
      expect(await peer.renew(current, LONG)).toBe(true)
    })

    test('expiry frees the lease, and it can be acquired again', async () => {
      const conversationId = id()
      expect(await leases.acquire(conversationId, SHORT)).toBeDefined()
      await expire(conversationId)
      expect(await peer.isHeld(conversationId)).toBe(false)
      expect(await peer.acquire(conversationId, LONG)).toBeDefined()
    })

    test('tokens strictly increase across acquires, conversations, instances and stores', async () => {
      const tokens: number[] = []
      const take = async (store: ConversationLeases, conversationId: string) => {
        const lease = (await store.acquire(conversationId, LONG)) as Lease
        tokens.push(lease.token)
        await store.release(lease)
      }
      const shared = id()
      for (let round = 0; round < 5; round++) {
        await take(leases, shared)
        await take(peer, shared)
        await take(round % 2 === 0 ? leases : peer, id())
      }
      // A fresh (empty, as if wiped) store still issues larger tokens.
      const fresh = await backend.open()
      await take(fresh.store, shared)
      await take(fresh.peer(), id())
      await take(leases, shared)

      for (let i = 1; i < tokens.length; i++)
        expect(tokens[i] as number).toBeGreaterThan(tokens[i - 1] as number)
      expect(tokens.every((token) => Number.isSafeInteger(token))).toBe(true)
    })

    test('of 20 concurrent acquires over two instances, exactly one wins', async () => {
      const instances = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? leases : peer))
      for (let round = 0; round < 3; round++) {
        const conversationId = id()
        const grants = await Promise.all(instances.map((s) => s.acquire(conversationId, LONG)))
        const winners = grants.filter((grant) => grant !== undefined)
        expect(winners).toHaveLength(1)
      }
    })

    test('a ttl that is not a positive integer of ms is refused', async () => {
      await expect(leases.acquire(id(), 0)).rejects.toThrow(RangeError)
      await expect(leases.acquire(id(), 1.5)).rejects.toThrow(RangeError)
      const lease = (await leases.acquire(id(), LONG)) as Lease
      await expect(leases.renew(lease, -1)).rejects.toThrow(RangeError)
      expect(await leases.isHeld(lease.conversationId)).toBe(true)
    })
  })
}
