// Redis Cluster's key slots, and commands sent in as few round trips as the
// deployment allows. A Cluster refuses a command or script whose keys lie in
// two slots (CROSSSLOT), and ioredis refuses a pipeline whose commands go to
// two groups of nodes; one server takes anything. So work on many keys is
// grouped by slot (bySlot) or by the nodes serving it (pipelined): one group,
// one pipeline on one server or a Sentinel's primary; one per slot or node
// group on a Cluster.
import type { ChainableCommander, Cluster } from 'ioredis'
import { isCluster, type RedisClient } from './redis-connections.ts'

export const SLOTS = 16_384

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256)
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
    table[byte] = crc
  }
  return table
})()

/** CRC16-CCITT (XModem) of the bytes, as Redis Cluster computes it. */
function crc16(bytes: Uint8Array): number {
  let crc = 0
  for (const byte of bytes)
    crc = ((crc << 8) & 0xffff) ^ (CRC16_TABLE[((crc >> 8) ^ byte) & 0xff] ?? 0)
  return crc
}

const encoder = new TextEncoder()

/** The slot of a key: its hash tag's, if it has a non-empty one, else the whole key's. */
export function slotOf(key: string): number {
  const open = key.indexOf('{')
  if (open !== -1) {
    const close = key.indexOf('}', open + 1)
    if (close > open + 1) return crc16(encoder.encode(key.slice(open + 1, close))) % SLOTS
  }
  return crc16(encoder.encode(key)) % SLOTS
}

/** A text's bucket of `buckets`, the same in every process (its CRC16, as slots are). */
export function bucketOf(text: string, buckets: number): number {
  return crc16(encoder.encode(text)) % buckets
}

/** The items in groups whose keys share a slot (Cluster), or all in one group (any other deployment). */
export function bySlot<T>(
  redis: RedisClient,
  items: readonly T[],
  keyOf: (item: T) => string,
): T[][] {
  if (!isCluster(redis)) return items.length === 0 ? [] : [[...items]]
  const groups = new Map<number, T[]>()
  for (const item of items) {
    const slot = slotOf(keyOf(item))
    const group = groups.get(slot)
    if (group) group.push(item)
    else groups.set(slot, [item])
  }
  return [...groups.values()]
}

/** A command on the keys of one slot: `key` is one of them, add() queues it on a pipeline. */
export interface SlotCommand {
  key: string
  add(pipeline: ChainableCommander): void
}

export type Reply = [error: Error | null, result: unknown]

/** The nodes serving a slot, as ioredis groups pipelines (the slot itself until it knows them). */
function nodeGroup(cluster: Cluster, slot: number): string {
  return cluster.slots[slot]?.join(';') ?? `slot ${slot}`
}

/**
 * Runs the commands in one pipeline per group of nodes (one in all, but on a
 * Cluster), the groups side by side, and answers each command's reply in
 * command order. A pipeline that fails as a whole answers its error for each
 * of its commands.
 */
export async function pipelined(
  redis: RedisClient,
  commands: readonly SlotCommand[],
): Promise<Reply[]> {
  if (commands.length === 0) return []
  const groups = new Map<string, number[]>()
  if (!isCluster(redis))
    groups.set(
      '',
      commands.map((_, index) => index),
    )
  else
    for (const [index, command] of commands.entries()) {
      const group = nodeGroup(redis, slotOf(command.key))
      const indexes = groups.get(group)
      if (indexes) indexes.push(index)
      else groups.set(group, [index])
    }
  const replies: Reply[] = new Array(commands.length)
  await Promise.all(
    [...groups.values()].map(async (indexes) => {
      const pipeline = redis.pipeline()
      for (const index of indexes) commands[index]?.add(pipeline)
      let results: Reply[] | null
      try {
        results = await pipeline.exec()
      } catch (error) {
        results = null
        const failure = error instanceof Error ? error : new Error(String(error))
        for (const index of indexes) replies[index] = [failure, null]
        return
      }
      for (const [at, index] of indexes.entries())
        replies[index] = results?.[at] ?? [new Error('Redis pipeline was aborted'), null]
    }),
  )
  return replies
}
