// The TurnLogStore contract, run unchanged over every adapter here: the
// in-process one always, the Redis one when TEST_REDIS_URL is set (a random
// key prefix per run, deleted afterwards), and the Redis one on a private
// Redis Cluster where redis-server is installed. A second Redis store on a
// second connection stands for another process, so cross-instance reading is
// tested too. Waits are on events and promises, never on sleeps.
import { afterAll, describe, expect, spyOn, test } from 'bun:test'
import Redis from 'ioredis'
import { createMemoryTurnLogs } from '../../src/state/turn-log/memory-turn-logs.ts'
import { turnLogKeys } from '../../src/state/turn-log/redis-turn-log-scripts.ts'
import { createRedisTurnLogs } from '../../src/state/turn-log/redis-turn-logs.ts'
import {
  TurnLogFencedError,
  TurnLogMissingError,
  type TurnLogStore,
} from '../../src/state/turn-log/turn-log-store.ts'
import { isCluster, primariesOf, type RedisClient } from '../../src/storage/redis-connections.ts'
import { uniqueName } from '../support/backends.ts'
import { startFaultProxy, targetOf, throughProxy } from '../support/fault-proxy.ts'
import {
  clusterConnector,
  REDIS_DEPLOYMENTS_MISSING,
  sharedCluster,
  until,
} from '../support/redis-deployments.ts'

const RETENTION_MS = 10_000
const OPEN_TTL_MS = 60_000

interface TurnLogBackend {
  name: 'memory' | 'redis' | 'redis cluster'
  /** A store as one process sees it. */
  open(): TurnLogStore
  /** A store as another process sees it (Redis only), blocking XREADs up to blockMs. */
  openOther?(blockMs?: number): TurnLogStore
  /** The Redis client and key prefix of open(), for looking at keys. */
  redis?: { client: Redis; prefix: string; url: string }
  cleanup(): Promise<void>
}

function memoryBackend(): TurnLogBackend {
  const stores: TurnLogStore[] = []
  return {
    name: 'memory',
    open() {
      const store = createMemoryTurnLogs({ retentionMs: RETENTION_MS })
      stores.push(store)
      return store
    },
    async cleanup() {
      for (const store of stores) await store.close()
    },
  }
}

/**
 * The Redis store on one server (`url`, whose tests also reach the server
 * directly) or on a Cluster (every key and script per slot, readers polling):
 * two clients, so a second store can act as another process.
 */
function redisStoreBackend(
  name: 'redis' | 'redis cluster',
  connect: () => RedisClient,
  url?: string,
): TurnLogBackend {
  const prefix = `${uniqueName('turnlog')}:`
  const client = connect()
  const otherClient = connect()
  const stores: TurnLogStore[] = []
  const make = (redis: RedisClient, blockMs = 200) => {
    const store = createRedisTurnLogs({
      redis,
      keyPrefix: prefix,
      retentionMs: RETENTION_MS,
      openTtlMs: OPEN_TTL_MS,
      blockMs,
    })
    stores.push(store)
    return store
  }
  return {
    name,
    open: () => make(client),
    openOther: (blockMs) => make(otherClient, blockMs),
    ...(url && !isCluster(client) ? { redis: { client, prefix, url } } : {}),
    async cleanup() {
      for (const store of stores) await store.close()
      for (const node of primariesOf(client)) {
        let cursor = '0'
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1_000)
          for (const key of keys) await node.unlink(key)
          cursor = next
        } while (cursor !== '0')
      }
      await client.quit()
      await otherClient.quit()
    },
  }
}

if (REDIS_DEPLOYMENTS_MISSING)
  console.log(`turn-log-contract: Redis Cluster skipped: ${REDIS_DEPLOYMENTS_MISSING}`)
const cluster = REDIS_DEPLOYMENTS_MISSING ? undefined : await sharedCluster()

function turnLogBackends(): TurnLogBackend[] {
  const backends = [memoryBackend()]
  const url = process.env.TEST_REDIS_URL
  if (url) backends.push(redisStoreBackend('redis', () => new Redis(url), url))
  if (cluster) {
    const connector = clusterConnector(cluster)
    backends.push(redisStoreBackend('redis cluster', () => connector.connect()))
  }
  return backends
}

/** Every item read, the batches flattened; each batch must hold at least one item. */
async function collect(batches: AsyncIterable<readonly string[]>): Promise<string[]> {
  const all: string[] = []
  for await (const batch of batches) {
    expect(batch.length).toBeGreaterThan(0)
    all.push(...batch)
  }
  return all
}

const identity = () => ({
  messageId: uniqueName('msg'),
  conversationId: uniqueName('conv'),
  userId: 'alice',
})

/** An opened log with items appended and, when `finish`, finished. */
async function logWith(store: TurnLogStore, items: string[], finish = false) {
  const id = identity()
  await store.open(id)
  if (items.length > 0) await store.append(id.messageId, items, 0)
  if (finish) await store.finish(id.messageId, 0)
  return id.messageId
}

for (const backend of turnLogBackends()) {
  describe(`TurnLogStore contract: ${backend.name}`, () => {
    const store = backend.open()
    /** The readers' view: another process for Redis, the same store in memory. */
    const other = backend.openOther?.() ?? store
    afterAll(() => backend.cleanup(), 30_000)

    test('durable names the adapter', () => {
      expect(store.durable).toBe(backend.name !== 'memory')
    })

    test('open, info, append, finish', async () => {
      const id = identity()
      expect(await store.info(id.messageId)).toBeUndefined()
      await store.open(id)
      expect(await store.info(id.messageId)).toEqual({ ...id, length: 0, finished: false })
      await store.append(id.messageId, ['a', 'b'], 0)
      await store.append(id.messageId, [], 0)
      await store.append(id.messageId, ['c'], 0)
      expect(await other.info(id.messageId)).toEqual({ ...id, length: 3, finished: false })
      await store.finish(id.messageId, 0)
      await store.finish(id.messageId, 0) // a second finish changes nothing
      expect(await other.info(id.messageId)).toEqual({ ...id, length: 3, finished: true })
      expect(await other.readAll(id.messageId)).toEqual(['a', 'b', 'c'])
      await expect(store.append(id.messageId, ['d'], 0)).rejects.toThrow(/finished/)
      expect(await store.readAll(id.messageId)).toEqual(['a', 'b', 'c'])
    })

    test('a log opened with items holds them at once; appends follow them', async () => {
      const id = identity()
      await store.open(id, ['p0', 'p1'])
      expect(await other.info(id.messageId)).toEqual({ ...id, length: 2, finished: false })
      const reader = other.read(id.messageId, 1)
      expect((await reader.next()).value).toEqual(['p1'])
      await store.append(id.messageId, ['a'], 0)
      expect((await reader.next()).value).toEqual(['a'])
      await store.finish(id.messageId, 0)
      expect(await collect(reader)).toEqual([])
      expect(await collect(store.read(id.messageId, 0))).toEqual(['p0', 'p1', 'a'])
      await expect(store.open(id, ['x'])).rejects.toThrow()
    })

    test('reading a finished log from every offset yields exactly the rest, once', async () => {
      const items = ['0', '1', '2', '3', '4']
      const messageId = await logWith(store, items, true)
      for (const reader of new Set([store, other]))
        for (let offset = 0; offset <= items.length + 2; offset++)
          expect(await collect(reader.read(messageId, offset))).toEqual(items.slice(offset))
    })

    test('an empty finished log reads as nothing', async () => {
      const messageId = await logWith(store, [], true)
      expect(await collect(other.read(messageId, 0))).toEqual([])
      expect(await other.readAll(messageId)).toEqual([])
    })

    test('reading a log that does not exist ends at once', async () => {
      expect(await collect(other.read(uniqueName('absent'), 0))).toEqual([])
      expect(await other.readAll(uniqueName('absent'))).toEqual([])
    })

    test('a live reader sees items appended after it started, and ends at finish', async () => {
      const messageId = await logWith(store, ['a'])
      const reader = store.read(messageId, 0)
      expect((await reader.next()).value).toEqual(['a'])
      const pending = reader.next()
      await store.append(messageId, ['b'], 0)
      expect((await pending).value).toEqual(['b'])
      // Not awaited: the reader still sees them in order.
      void store.append(messageId, ['c', 'd'], 0)
      void store.append(messageId, ['e'], 0)
      void store.finish(messageId, 0)
      expect(await collect(reader)).toEqual(['c', 'd', 'e'])
    })

    test('items appended together reach a waiting reader as one batch, in order', async () => {
      const messageId = await logWith(store, ['a'])
      const appended = ['a']
      for (const reader of new Set([store, other])) {
        const items = reader.read(messageId, appended.length)
        const batch = items.next()
        const together = ['x', 'y', `z${appended.length}`]
        await store.append(messageId, together, 0)
        appended.push(...together)
        expect((await batch).value).toEqual(together)
        await items.return(undefined)
      }
      await store.finish(messageId, 0)
      expect(await collect(other.read(messageId, 0))).toEqual(appended)
    })

    test('a reader past the end of an open log waits for items to reach its offset', async () => {
      const messageId = await logWith(store, ['a'])
      for (const reader of new Set([store, other])) {
        const length = (await store.info(messageId))?.length ?? 0
        const items = reader.read(messageId, length + 2)
        const first = items.next()
        await store.append(messageId, ['x', 'y', `z${length}`], 0)
        expect((await first).value).toEqual([`z${length}`])
        await items.return(undefined)
      }
      await store.finish(messageId, 0)
      expect(await collect(other.read(messageId, 99))).toEqual([])
    })

    test('fencing: a claim raises the fence, lower writers are refused', async () => {
      const id = identity()
      await store.open(id)
      await store.append(id.messageId, ['a'], 0)
      expect(await other.claim(id.messageId, 5)).toEqual({ ...id, length: 1, finished: false })
      await expect(store.append(id.messageId, ['x'], 0)).rejects.toBeInstanceOf(TurnLogFencedError)
      await expect(store.finish(id.messageId, 4)).rejects.toBeInstanceOf(TurnLogFencedError)
      await expect(store.claim(id.messageId, 4)).rejects.toBeInstanceOf(TurnLogFencedError)
      await other.append(id.messageId, ['b'], 5)
      // A higher fence may write too; only a claim raises the log's fence.
      await other.append(id.messageId, ['c'], 7)
      expect(await other.claim(id.messageId, 7)).toEqual({ ...id, length: 3, finished: false })
      await expect(other.append(id.messageId, ['y'], 5)).rejects.toBeInstanceOf(TurnLogFencedError)
      await other.finish(id.messageId, 7)
      expect(await store.readAll(id.messageId)).toEqual(['a', 'b', 'c'])
      expect(await collect(store.read(id.messageId, 0))).toEqual(['a', 'b', 'c'])
      expect(await store.claim(uniqueName('absent'), 1)).toBeUndefined()
    })

    test('writes made together to many logs: one refused leaves the others written', async () => {
      const fenced = await logWith(store, ['a'])
      const finished = await logWith(store, ['a'], true)
      const fine = await logWith(store, ['a'])
      await other.claim(fenced, 3)
      // Issued in one tick, so the Redis adapter sends them in one batch.
      const outcomes = await Promise.allSettled([
        store.append(fenced, ['x'], 0),
        store.append(fine, ['b'], 0),
        store.append(finished, ['x'], 0),
        store.append(uniqueName('absent'), ['x'], 0),
        store.append(fine, ['c', 'd'], 0),
        store.finish(fine, 0),
      ])
      expect(outcomes.map((outcome) => outcome.status)).toEqual([
        'rejected',
        'fulfilled',
        'rejected',
        'rejected',
        'fulfilled',
        'fulfilled',
      ])
      const reasons = outcomes.map((outcome) =>
        outcome.status === 'rejected' ? outcome.reason : undefined,
      )
      expect(reasons[0]).toBeInstanceOf(TurnLogFencedError)
      expect(reasons[2]).toBeInstanceOf(Error)
      expect(reasons[3]).toBeInstanceOf(TurnLogMissingError)
      expect(await collect(other.read(fine, 0))).toEqual(['a', 'b', 'c', 'd'])
      expect(await other.readAll(fenced)).toEqual(['a'])
      expect(await other.readAll(finished)).toEqual(['a'])
      expect(await other.info(fine)).toMatchObject({ length: 4, finished: true })
    })

    test('a reader of the old writer follows the new owner after a takeover', async () => {
      const messageId = await logWith(store, ['a'])
      const reader = store.read(messageId, 0)
      expect((await reader.next()).value).toEqual(['a'])
      const rest = collect(reader)
      await other.claim(messageId, 1)
      await other.append(messageId, ['b', 'c'], 1)
      await other.finish(messageId, 1)
      // The old writer learns of the takeover on its next write.
      await expect(store.append(messageId, ['stale'], 0)).rejects.toBeInstanceOf(TurnLogFencedError)
      expect(await rest).toEqual(['b', 'c'])
    })

    test('a reader of the old writer follows the new owner, even with no write from the old one', async () => {
      const messageId = await logWith(store, ['a'])
      const rest = collect(store.read(messageId, 1))
      await other.claim(messageId, 1)
      await other.append(messageId, ['b'], 1)
      await other.finish(messageId, 1)
      expect(await rest).toEqual(['b'])
    })

    test('unfinished lists the logs left open, not finished, removed or younger ones', async () => {
      const [first, second, finished, removed] = [identity(), identity(), identity(), identity()]
      await store.open(first)
      await store.open(second, ['x'])
      await store.open(finished, ['y'])
      await store.open(removed)
      await store.finish(finished.messageId, 0)
      await store.remove(removed.messageId)
      const listed = await other.unfinished(0, 100_000)
      expect(listed).toContainEqual(first)
      expect(listed).toContainEqual(second)
      const ids = listed.map((log) => log.messageId)
      expect(ids).not.toContain(finished.messageId)
      expect(ids).not.toContain(removed.messageId)
      // Opened just now: not yet a minute old.
      const old = (await other.unfinished(60_000, 100_000)).map((log) => log.messageId)
      expect(old).not.toContain(first.messageId)
      expect(await other.unfinished(0, 1)).toHaveLength(1)
      await store.finish(first.messageId, 0)
      await store.append(second.messageId, ['z'], 0)
      const after = (await other.unfinished(0, 100_000)).map((log) => log.messageId)
      expect(after).not.toContain(first.messageId)
      expect(after).toContain(second.messageId)
    })

    test('writes to a missing log are refused; opening twice throws', async () => {
      const absent = uniqueName('absent')
      await expect(store.append(absent, ['a'], 0)).rejects.toBeInstanceOf(TurnLogMissingError)
      await expect(store.finish(absent, 0)).rejects.toBeInstanceOf(TurnLogMissingError)
      const id = identity()
      await store.open(id)
      await expect(store.open(id)).rejects.toThrow(/exists/)
      await expect(other.open(id)).rejects.toThrow(/exists/)
    })

    test('remove deletes the log and ends the readers following it', async () => {
      const messageId = await logWith(store, ['a'])
      const local = store.read(messageId, 1).next()
      const remote = other.read(messageId, 1).next()
      await store.remove(messageId)
      expect((await local).done).toBe(true)
      expect((await remote).done).toBe(true)
      expect(await store.info(messageId)).toBeUndefined()
      expect(await store.readAll(messageId)).toEqual([])
      await expect(store.append(messageId, ['b'], 0)).rejects.toBeInstanceOf(TurnLogMissingError)
    })

    test('a removal elsewhere ends the readers here', async () => {
      const messageId = await logWith(store, ['a'])
      const reader = store.read(messageId, 1).next()
      await other.remove(messageId)
      expect((await reader).done).toBe(true)
    })

    test('abort ends a reader, waiting or not', async () => {
      const messageId = await logWith(store, ['a', 'b'])
      for (const reader of new Set([store, other])) {
        const controller = new AbortController()
        const items = reader.read(messageId, 0, controller.signal)
        // Both items were there when the reader looked: one batch.
        expect((await items.next()).value).toEqual(['a', 'b'])
        controller.abort()
        expect((await items.next()).done).toBe(true)
        const waiting = new AbortController()
        const pending = reader.read(messageId, 2, waiting.signal).next()
        waiting.abort()
        expect((await pending).done).toBe(true)
      }
    })

    test('close ends the readers of the store', async () => {
      const closing = backend.open()
      const messageId = await logWith(closing, ['a'])
      const own = closing.read(messageId, 1).next()
      const followed = closing.read(await logWith(store, ['a']), 1).next()
      await closing.close()
      expect((await own).done).toBe(true)
      expect((await followed).done).toBe(true)
      expect(await collect(closing.read(messageId, 0))).toEqual([])
    })

    test('many concurrent appends to many logs keep each log in order', async () => {
      const ids = Array.from({ length: 200 }, (_, n) => `${uniqueName('many')}_${n}`)
      await Promise.all(ids.map((messageId) => store.open({ ...identity(), messageId })))
      const writes: Promise<void>[] = []
      for (let i = 0; i < 20; i++)
        for (const messageId of ids) writes.push(store.append(messageId, [`${messageId}:${i}`], 0))
      for (const messageId of ids) writes.push(store.finish(messageId, 0))
      await Promise.all(writes)
      const expected = (messageId: string) =>
        Array.from({ length: 20 }, (_, i) => `${messageId}:${i}`)
      for (const messageId of ids) {
        expect(await other.readAll(messageId)).toEqual(expected(messageId))
        expect(await other.info(messageId)).toMatchObject({ length: 20, finished: true })
      }
      expect(await collect(other.read(ids[7] ?? '', 0))).toEqual(expected(ids[7] ?? ''))
    })

    test('hostile content round-trips byte for byte', async () => {
      const items = [
        'data: {"text":"line\\nbreak"}\n\n',
        'raw\nnewlines\r\nand\rreturns\n\n\n',
        '',
        'ünïcode ✓ 😀 \u2028\u2029 \u0000 nul, "quotes" and \\backslashes',
        'é'.repeat(50_000), // 100 KB of UTF-8
        `${'x'.repeat(100_000)}😀`,
      ]
      const messageId = await logWith(store, items)
      const live = collect(other.read(messageId, 0))
      await store.finish(messageId, 0)
      expect(await other.readAll(messageId)).toEqual(items)
      expect(await live).toEqual(items)
      expect(await collect(store.read(messageId, 3))).toEqual(items.slice(3))
    })

    if (backend.name === 'memory')
      test('retention: a finished log disappears retentionMs after finish', async () => {
        let now = 1_000
        const clocked = createMemoryTurnLogs({ retentionMs: 500, now: () => now })
        const id = identity()
        await clocked.open(id)
        await clocked.append(id.messageId, ['a'], 0)
        now += 10_000 // an open log never expires here
        await clocked.finish(id.messageId, 0)
        now += 499
        expect(await clocked.info(id.messageId)).toMatchObject({ finished: true })
        expect(await clocked.readAll(id.messageId)).toEqual(['a'])
        now += 1
        expect(await clocked.info(id.messageId)).toBeUndefined()
        expect(await clocked.readAll(id.messageId)).toEqual([])
        expect(await collect(clocked.read(id.messageId, 0))).toEqual([])
        await clocked.close()
      })

    const inspect = backend.redis
    if (inspect) {
      const pttls = (messageId: string) => {
        const { stream, meta } = turnLogKeys(inspect.prefix, messageId)
        return Promise.all([inspect.client.pttl(stream), inspect.client.pttl(meta)])
      }

      test('retention: open logs expire after openTtlMs, finished ones after retentionMs', async () => {
        const messageId = await logWith(store, ['a'])
        for (const ttl of await pttls(messageId)) {
          expect(ttl).toBeGreaterThan(RETENTION_MS)
          expect(ttl).toBeLessThanOrEqual(OPEN_TTL_MS)
        }
        await store.finish(messageId, 0)
        for (const ttl of await pttls(messageId)) {
          expect(ttl).toBeGreaterThan(0)
          expect(ttl).toBeLessThanOrEqual(RETENTION_MS)
        }
      })

      test('a log opened with items expires after openTtlMs, both keys', async () => {
        const id = identity()
        await store.open(id, ['p0'])
        for (const ttl of await pttls(id.messageId)) {
          expect(ttl).toBeGreaterThan(RETENTION_MS)
          expect(ttl).toBeLessThanOrEqual(OPEN_TTL_MS)
        }
      })

      test('a log opened empty gets its stream an expiry with its first append', async () => {
        const messageId = await logWith(store, [])
        await store.append(messageId, ['a'], 0)
        for (const ttl of await pttls(messageId)) {
          expect(ttl).toBeGreaterThan(RETENTION_MS)
          expect(ttl).toBeLessThanOrEqual(OPEN_TTL_MS)
        }
      })

      test('appends renew the open expiry only once half of it has passed', async () => {
        const messageId = await logWith(store, ['a'])
        const { meta, stream } = turnLogKeys(inspect.prefix, messageId)
        const shortened = 20_000
        await inspect.client.pexpire(meta, shortened)
        await inspect.client.pexpire(stream, shortened)
        await store.append(messageId, ['b'], 0)
        // Renewed at the first append: not again before half the open expiry.
        for (const ttl of await pttls(messageId)) expect(ttl).toBeLessThanOrEqual(shortened)
        // Half of it has passed (as if): the next append renews both keys.
        await inspect.client.hset(meta, 'renewAt', Date.now() - 1)
        await store.append(messageId, ['c'], 0)
        for (const ttl of await pttls(messageId)) {
          expect(ttl).toBeGreaterThan(shortened)
          expect(ttl).toBeLessThanOrEqual(OPEN_TTL_MS)
        }
        expect(await other.readAll(messageId)).toEqual(['a', 'b', 'c'])
      })

      test('a log that expired while open leaves the unfinished set when next listed', async () => {
        const id = identity()
        await store.open(id, ['a'])
        const { meta, stream } = turnLogKeys(inspect.prefix, id.messageId)
        const setKey = `${inspect.prefix}unfinished`
        expect(await inspect.client.zscore(setKey, id.messageId)).not.toBeNull()
        await inspect.client.del(meta, stream)
        const ids = (await other.unfinished(0, 100_000)).map((log) => log.messageId)
        expect(ids).not.toContain(id.messageId)
        expect(await inspect.client.zscore(setKey, id.messageId)).toBeNull()
      })

      test('a stream ahead of its meta refuses the append and writes nothing', async () => {
        const messageId = await logWith(store, ['a', 'b'])
        const { meta } = turnLogKeys(inspect.prefix, messageId)
        await inspect.client.hset(meta, 'length', 1)
        await expect(other.append(messageId, ['x'], 0)).rejects.toThrow('disagree')
        expect(await other.readAll(messageId)).toEqual(['a', 'b'])
      })

      test('an append whose reply was lost with the connection is sent again and lands once', async () => {
        const proxy = await startFaultProxy(targetOf(inspect.url))
        const client = new Redis(throughProxy(inspect.url, proxy), { maxRetriesPerRequest: 1 })
        client.on('error', () => {})
        const through = createRedisTurnLogs({
          redis: client,
          keyPrefix: inspect.prefix,
          retentionMs: RETENTION_MS,
        })
        try {
          const messageId = await logWith(through, ['a'])
          const { meta } = turnLogKeys(inspect.prefix, messageId)
          // The request reaches Redis; its reply is held, then the connection is cut.
          proxy.delay(1_000)
          const appending = through.append(messageId, ['b', 'c'], 0)
          await until(
            async () => (await inspect.client.hget(meta, 'length')) === '3',
            'the append reached Redis',
          )
          proxy.drop()
          proxy.delay(0)
          proxy.pass()
          await appending
          await through.append(messageId, ['d'], 0)
          expect(await other.readAll(messageId)).toEqual(['a', 'b', 'c', 'd'])
        } finally {
          await through.close()
          client.disconnect()
          await proxy.close()
        }
      })

      /** The log as a replica that had its first `length` items has it once it is the primary. */
      const loseAllBut = async (messageId: string, length: number) => {
        const { meta, stream } = turnLogKeys(inspect.prefix, messageId)
        const kept = await inspect.client.xrange(stream, '-', '+', 'COUNT', length)
        await inspect.client.del(stream)
        for (const [id, fields] of kept) await inspect.client.xadd(stream, id, ...fields)
        await inspect.client.hset(meta, 'length', length)
      }

      test('items a stale failover lost are written again by their writer, from its mirror', async () => {
        const messageId = await logWith(store, ['a', 'b', 'c'])
        await loseAllBut(messageId, 1)
        await store.append(messageId, ['d'], 0)
        expect(await other.readAll(messageId)).toEqual(['a', 'b', 'c', 'd'])
        // A writer that does not have them (it took the log over) is refused.
        expect(await other.claim(messageId, 1)).toMatchObject({ length: 4 })
        await loseAllBut(messageId, 3)
        await expect(other.append(messageId, ['e'], 1)).rejects.toThrow('lost items')
        expect(await other.readAll(messageId)).toEqual(['a', 'b', 'c'])
      })

      test('a finish after a stale failover lost items writes them again first: the log ends whole', async () => {
        const messageId = await logWith(store, ['a', 'b', 'c'])
        await loseAllBut(messageId, 1)
        await store.finish(messageId, 0)
        expect(await other.readAll(messageId)).toEqual(['a', 'b', 'c'])
        expect(await other.info(messageId)).toMatchObject({ length: 3, finished: true })
        expect(await collect(other.read(messageId, 0))).toEqual(['a', 'b', 'c'])
      })

      test("a stream's last items and its finish, sent together after such a loss, land after what was lost", async () => {
        const messageId = await logWith(store, ['a', 'b', 'c'])
        await loseAllBut(messageId, 1)
        // As a turn's ending writes them (lifecycle.ts endStream): one batch.
        await Promise.all([store.append(messageId, ['d', 'e'], 0), store.finish(messageId, 0)])
        expect(await other.readAll(messageId)).toEqual(['a', 'b', 'c', 'd', 'e'])
        expect(await other.info(messageId)).toMatchObject({ length: 5, finished: true })
      })

      test('readers on another instance follow live, join while it blocks, end at finish', async () => {
        // XREAD blocks for a minute here: only CLIENT UNBLOCK lets later logs join in time.
        const remote = backend.openOther?.(60_000) ?? other
        const first = await logWith(store, ['a0'])
        const firstReader = remote.read(first, 0)
        expect((await firstReader.next()).value).toEqual(['a0'])
        const pending = firstReader.next()
        await store.append(first, ['a1'], 0)
        expect((await pending).value).toEqual(['a1'])
        const second = await logWith(store, [])
        const secondReader = remote.read(second, 0)
        const secondFirst = secondReader.next() // joins the XREAD blocked on `first`
        const lateReader = collect(remote.read(first, 1))
        await store.append(second, ['b0'], 0)
        expect((await secondFirst).value).toEqual(['b0'])
        await store.append(first, ['a2'], 0)
        await store.finish(first, 0)
        await store.append(second, ['b1', 'b2'], 0)
        await store.finish(second, 0)
        expect(await collect(firstReader)).toEqual(['a2'])
        expect(await lateReader).toEqual(['a1', 'a2'])
        expect(await collect(secondReader)).toEqual(['b1', 'b2'])
        await remote.close()
      })

      /** A store on a Redis client of its own, so that no other store's commands are counted. */
      const storeOnOwnClient = () => {
        const client = new Redis(inspect.url)
        const batched = createRedisTurnLogs({
          redis: client,
          keyPrefix: inspect.prefix,
          retentionMs: RETENTION_MS,
        })
        return { client, batched }
      }

      test('a batch of appends to many logs is one pipeline and one script call', async () => {
        const { client, batched } = storeOnOwnClient()
        const ids = await Promise.all(Array.from({ length: 50 }, () => logWith(batched, [])))
        const realPipeline = client.pipeline.bind(client)
        const pipelines = spyOn(client, 'pipeline')
        const evals = spyOn(client, 'evalsha')
        // Counts the script calls queued on each pipeline the store makes.
        let scriptCalls = 0
        pipelines.mockImplementation((...args) => {
          const pipeline = realPipeline(...args)
          const evalsha = pipeline.evalsha.bind(pipeline)
          pipeline.evalsha = ((...evalArgs: Parameters<typeof evalsha>) => {
            scriptCalls++
            return evalsha(...evalArgs)
          }) as typeof evalsha
          return pipeline
        })
        try {
          await Promise.all(ids.map((messageId) => batched.append(messageId, ['a', 'b'], 0)))
          expect(pipelines).toHaveBeenCalledTimes(1)
          expect(scriptCalls).toBe(1)
          expect(evals).not.toHaveBeenCalled()
          // While that batch is in flight, the next appends wait for it, then go as one.
          const first = Promise.all(ids.map((messageId) => batched.append(messageId, ['c'], 0)))
          await Promise.resolve()
          const second = Promise.all(ids.map((messageId) => batched.append(messageId, ['d'], 0)))
          await Promise.all([first, second])
          expect(pipelines).toHaveBeenCalledTimes(3)
          // 1,250 items at once: still one pipeline, its writes cut into two script calls, in order.
          const many = Array.from({ length: 25 }, (_, index) => `e${index}`)
          scriptCalls = 0
          await Promise.all(ids.map((messageId) => batched.append(messageId, many, 0)))
          expect(pipelines).toHaveBeenCalledTimes(4)
          expect(scriptCalls).toBe(2)
        } finally {
          pipelines.mockRestore()
          evals.mockRestore()
          await batched.close()
          await client.quit()
        }
        for (const messageId of [ids[0], ids[49]])
          expect(await other.readAll(messageId ?? '')).toEqual([
            'a',
            'b',
            'c',
            'd',
            ...Array.from({ length: 25 }, (_, index) => `e${index}`),
          ])
      })

      test('after Redis loses its scripts, opens, claims and a whole batch still land, in order', async () => {
        const { client, batched } = storeOnOwnClient()
        const ids = await Promise.all(Array.from({ length: 20 }, () => logWith(batched, ['x'])))
        const big = Array.from({ length: 1_100 }, (_, index) => `big${index}`)
        const pipelines = spyOn(client, 'pipeline')
        try {
          await client.script('FLUSH')
          // One batch: every log's writes, one log with more items than a script call holds.
          await Promise.all(
            ids.flatMap((messageId, index) => [
              batched.append(messageId, ['a'], 0),
              batched.append(messageId, index === 0 ? big : ['b'], 0),
              batched.finish(messageId, 0),
            ]),
          )
          // Refused with NOSCRIPT, then sent once more with the script loaded.
          expect(pipelines).toHaveBeenCalledTimes(2)
          await client.script('FLUSH')
          const fresh = identity()
          await batched.open(fresh, ['first'])
          expect(await batched.claim(fresh.messageId, 5)).toMatchObject({ length: 1 })
          await client.script('FLUSH')
          await expect(batched.append(fresh.messageId, ['late'], 4)).rejects.toBeInstanceOf(
            TurnLogFencedError,
          )
        } finally {
          pipelines.mockRestore()
          await batched.close()
          await client.quit()
        }
        expect(await other.readAll(ids[0] ?? '')).toEqual(['x', 'a', ...big])
        for (const messageId of ids.slice(1))
          expect(await other.readAll(messageId)).toEqual(['x', 'a', 'b'])
        expect(await other.info(ids[0] ?? '')).toMatchObject({ finished: true, length: 1_102 })
      })
    }
  })
}
