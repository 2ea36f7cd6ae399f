// Live entries of logs that another process writes, for every reader in this
// process, over ONE blocking connection per store: a loop runs
// `XREAD BLOCK <ms> STREAMS k1 k2 … id1 id2 …` over all followed logs and hands
// each log's new entries to its listeners. When a log joins the set, the
// blocked XREAD is cut short with `CLIENT UNBLOCK <its id>` from the main
// connection so the next XREAD includes it. A log that disappears (removed,
// expired) is noticed by a check of the meta keys at most every blockMs, since
// a blocked XREAD does not return when its key is deleted.
//
// On a Cluster an XREAD can only name keys of one slot, and the logs lie in
// the slots of 256 buckets: there the loop polls instead, a non-blocking XREAD
// per bucket followed, in one pipeline per node, at a pace that grows with the
// number of logs.
import { duplicateClient, isCluster, type RedisClient } from '../../storage/redis-connections.ts'
import { bySlot, pipelined } from '../../storage/redis-slots.ts'
import { compareEntryIds, type TurnLogKeys } from './redis-turn-log-scripts.ts'

export interface StreamEntry {
  id: string
  field: string
  value: string
}

export interface FollowListener {
  /** New entries of the log, in order, possibly some the listener saw already. */
  entries(list: StreamEntry[]): void
  /** The log is gone or the follower closed: no entry will follow. */
  gone(): void
}

interface Watch {
  keys: TurnLogKeys
  /** The last entry id the loop read (or the first listener started after). */
  cursor: string
  listeners: Set<FollowListener>
}

type XReadReply = [key: string, entries: [id: string, fields: string[]][]][] | null

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const COUNT = 1_000
/** New logs within this window join the XREAD together. */
const WAKE_DELAY_MS = 2
/**
 * Least time between XREADs that found entries, growing with the number of
 * logs followed: an XREAD costs Redis time per key (measured on Redis 7: about
 * 2 µs unblocked, 3-4 times that when it blocks and is served), so with
 * thousands of busy logs, letting entries gather for a moment keeps the loop
 * from re-sending the whole key list for every few entries. 5 ms + 1 ms per
 * 100 logs, at most 100 ms: 5,000 busy logs cost Redis about 15% of a core.
 */
const paceMs = (logs: number) => Math.min(100, 5 + logs / 100)
/**
 * Time between polls on a Cluster: 10 ms + 1 ms per 10 logs, at most 250 ms,
 * so a few logs are followed at once, and 1,000 cost at most 256 XREADs
 * (one per bucket) every 110 ms, spread over the nodes.
 */
const pollMs = (logs: number) => Math.min(250, 10 + logs / 10)

export class RedisLogFollower {
  private readonly watches = new Map<string, Watch>()
  private connection: RedisClient | undefined
  private running = false
  private closed = false
  /** CLIENT ID of the blocking connection while its XREAD is pending. */
  private blockedId: number | undefined
  private iteration = 0
  private keysChanged = false
  private wakeTimer: ReturnType<typeof setTimeout> | undefined
  private lastCheck = Date.now()

  constructor(
    private readonly redis: RedisClient,
    private readonly blockMs: number,
  ) {}

  /**
   * Hands the log's entries after `cursor` to listener until unwatch. Returns
   * the cursor the log's shared watch is at: when it is past `cursor`, entries
   * in between went by before the listener joined and it must fetch them.
   * Returns undefined when the follower is closed.
   */
  watch(keys: TurnLogKeys, cursor: string, listener: FollowListener): string | undefined {
    if (this.closed) return undefined
    let watch = this.watches.get(keys.stream)
    if (!watch) {
      watch = { keys, cursor, listeners: new Set() }
      this.watches.set(keys.stream, watch)
      this.keysChanged = true
      this.scheduleWake()
    }
    watch.listeners.add(listener)
    if (!this.running) void this.loop()
    return watch.cursor
  }

  unwatch(stream: string, listener: FollowListener): void {
    const watch = this.watches.get(stream)
    if (!watch) return
    watch.listeners.delete(listener)
    // No wake: an extra key in the running XREAD costs nothing.
    if (watch.listeners.size === 0) this.watches.delete(stream)
  }

  /** Ends the listeners of a log (it was removed). */
  drop(stream: string): void {
    const watch = this.watches.get(stream)
    if (!watch) return
    this.watches.delete(stream)
    for (const listener of watch.listeners) listener.gone()
  }

  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.wakeTimer)
    for (const stream of [...this.watches.keys()]) this.drop(stream)
    this.connection?.disconnect()
  }

  private blocking(): RedisClient {
    if (!this.connection) {
      // XREAD BLOCK waits on purpose: no command deadline on this connection.
      this.connection = duplicateClient(this.redis, { commandTimeout: undefined })
      // Errors surface on the XREAD; without a listener ioredis logs each one.
      this.connection.on('error', () => {})
    }
    return this.connection
  }

  private async loop(): Promise<void> {
    this.running = true
    while (!this.closed && this.watches.size > 0) {
      if (isCluster(this.redis)) await this.poll()
      else await this.block()
      if (Date.now() - this.lastCheck >= this.blockMs) await this.dropMissing()
    }
    this.running = false
  }

  /** One blocking XREAD over every followed log. */
  private async block(): Promise<void> {
    const watches = [...this.watches.values()]
    const connection = this.blocking()
    const iteration = ++this.iteration
    this.keysChanged = false
    // Sent ahead of the XREAD on the same connection, so its reply comes first.
    connection.client('ID').then(
      (id) => {
        if (this.iteration !== iteration) return
        this.blockedId = id
        if (this.keysChanged) this.scheduleWake()
      },
      () => {},
    )
    const startedAt = Date.now()
    let reply: XReadReply = null
    try {
      reply = await connection.xread(
        'COUNT',
        COUNT,
        'BLOCK',
        this.blockMs,
        'STREAMS',
        ...watches.map((watch) => watch.keys.stream),
        ...watches.map((watch) => watch.cursor),
      )
    } catch {
      // Connection trouble: ioredis reconnects; don't spin meanwhile.
      if (!this.closed) await sleep(200)
    } finally {
      this.blockedId = undefined
    }
    if (reply) {
      this.deliver(reply)
      const rest = startedAt + paceMs(watches.length) - Date.now()
      if (rest > 0) await sleep(rest)
    }
  }

  /** One non-blocking XREAD per slot of followed logs (a Cluster), then a pause. */
  private async poll(): Promise<void> {
    const watches = [...this.watches.values()]
    const startedAt = Date.now()
    const replies = await pipelined(
      this.redis,
      bySlot(this.redis, watches, (watch) => watch.keys.stream).map((group) => ({
        key: group[0]?.keys.stream ?? '',
        add: (pipeline) =>
          pipeline.xread(
            'COUNT',
            COUNT,
            'STREAMS',
            ...group.map((watch) => watch.keys.stream),
            ...group.map((watch) => watch.cursor),
          ),
      })),
    )
    const found: NonNullable<XReadReply> = []
    for (const [error, reply] of replies)
      if (!error && reply) found.push(...(reply as NonNullable<XReadReply>))
    this.deliver(found)
    const rest = startedAt + pollMs(watches.length) - Date.now()
    if (rest > 0 && !this.closed) await sleep(rest)
  }

  private deliver(reply: NonNullable<XReadReply>): void {
    for (const [stream, raw] of reply) {
      const watch = this.watches.get(stream)
      const last = raw.at(-1)
      if (!watch || !last) continue
      if (compareEntryIds(last[0], watch.cursor) > 0) watch.cursor = last[0]
      const list = raw.map(([id, fields]) => ({
        id,
        field: fields[0] ?? '',
        value: fields[1] ?? '',
      }))
      for (const listener of [...watch.listeners]) listener.entries(list)
    }
  }

  private async dropMissing(): Promise<void> {
    this.lastCheck = Date.now()
    const watches = [...this.watches.values()]
    const results = await pipelined(
      this.redis,
      watches.map(({ keys }) => ({
        key: keys.meta,
        add: (pipeline) => pipeline.exists(keys.meta),
      })),
    )
    results.forEach(([error, exists], index) => {
      const watch = watches[index]
      if (!error && exists === 0 && watch && this.watches.get(watch.keys.stream) === watch)
        this.drop(watch.keys.stream)
    })
  }

  /** Cuts the pending XREAD short so the next one covers the new set of logs. */
  private scheduleWake(): void {
    if (this.wakeTimer || this.closed) return
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined
      const id = this.blockedId
      const iteration = this.iteration
      if (id === undefined || !this.keysChanged) return
      this.redis.client('UNBLOCK', id).then(
        // 0: the XREAD was not blocked yet; try again while it is the same one.
        (unblocked) => {
          if (unblocked === 0 && this.iteration === iteration && this.blockedId === id)
            this.scheduleWake()
        },
        () => {},
      )
    }, WAKE_DELAY_MS)
    this.wakeTimer.unref?.()
  }
}
