// A Redis Cluster whose slots move under a client (a failover, a reshard):
// the commands one loop turn issues all land, each redirected to the slot's
// new node, and later ones go there directly. With ioredis' auto-pipelining
// they did not: a tick's commands for one node went out as one pipeline, and
// the MOVED of a moved slot's commands reached the caller while the others
// were applied (redis/ioredis#2075) - after a Cluster failover that refused
// sends with `MOVED 140 …` (issue #29). So a Cluster client is never
// auto-pipelined, whatever it asks (redis-connections.ts). On a private
// Cluster of three masters; skips where redis-server or redis-cli is missing.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type RedisClient, redisConnector } from '../../src/storage/redis-connections.ts'
import { slotOf } from '../../src/storage/redis-slots.ts'
import {
  type PrivateCluster,
  REDIS_DEPLOYMENTS_MISSING,
  type RedisNode,
  startCluster,
} from '../support/redis-deployments.ts'

/** A key whose slot `node` serves, starting from `name`: its slot and the key. */
async function keyServedBy(cluster: PrivateCluster, node: RedisNode, name: string) {
  for (let i = 0; ; i++) {
    const key = `${name}:${i}`
    if ((await cluster.masterOf(slotOf(key))) === node) return key
  }
}

describe.skipIf(REDIS_DEPLOYMENTS_MISSING !== undefined)('a Redis Cluster whose slots move', () => {
  let cluster: PrivateCluster
  let client: RedisClient
  beforeAll(async () => {
    cluster = await startCluster(3, 0)
  }, 60_000)
  afterAll(async () => {
    client?.disconnect()
    await cluster?.stop()
  })

  test("a tick's commands on a moved slot and on a kept one all land, with auto-pipelining asked for", async () => {
    const [from, to] = cluster.nodes as [RedisNode, RedisNode]
    // Two keys on one node, in different slots: one of them will move.
    const moving = await keyServedBy(cluster, from, 'moving')
    let staying = await keyServedBy(cluster, from, 'staying')
    for (let i = 0; slotOf(staying) === slotOf(moving); i++)
      staying = await keyServedBy(cluster, from, `staying${i}`)
    client = redisConnector({
      kind: 'cluster',
      nodes: [{ host: '127.0.0.1', port: from.port }],
    }).connect({ enableAutoPipelining: true, maxRetriesPerRequest: 1 })
    client.on('error', () => {})
    // The client learns the topology, and both keys exist where they are.
    expect(await Promise.all([client.incr(moving), client.incr(staying)])).toEqual([1, 1])

    // The moving key's slot is handed to the other master behind the client's back.
    await from.admin.del(moving)
    const slot = slotOf(moving)
    const toId = String(await to.admin.call('CLUSTER', 'MYID'))
    await to.admin.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', toId)
    await from.admin.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', toId)
    expect(await cluster.masterOf(slot)).toBe(to)

    // One tick, both keys, twice over: every command answers, none is lost or doubled.
    for (let round = 0; round < 2; round++) {
      const answers = await Promise.allSettled([client.incr(moving), client.incr(staying)])
      expect(
        answers.map((answer) =>
          answer.status === 'fulfilled' ? answer.value : String(answer.reason),
        ),
      ).toEqual([round + 1, round + 2])
    }
    expect(await to.admin.get(moving)).toBe('2')
    expect(await from.admin.get(staying)).toBe('3')
    expect(await from.admin.call('CLUSTER', 'COUNTKEYSINSLOT', String(slot))).toBe(0)
  }, 30_000)
})
