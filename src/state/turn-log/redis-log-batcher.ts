// Group commit for the Redis TurnLogStore: appends and finishes of every log
// are queued in the process and sent together while no batch is in flight;
// the next batch leaves when the previous one is acknowledged. A batch is one
// round trip and one script call (WRITE_SCRIPT) for all the logs it touches,
// not one per log or per item (on a Cluster: one script call per bucket of
// logs, one pipeline per node), and the writes of one log stay in call order (one
// queue, batches in series, a log's writes in queue order inside one script
// call).
//
// A batch that fails on the way (a lost connection, a timeout, a failover of
// the primary or of a Cluster node) is sent again, within RETRY_WINDOW_MS,
// without duplicating anything: each append carries the offset its first item
// must take (the store tells the batcher each log's length when it opens or
// claims it), so an append that landed before the failure is recognised and
// not written twice, and a finish is idempotent anyway. An append or finish
// that finds its log short of what it expects (a failover to a replica that
// missed acknowledged items) writes them again first, from the mirror, and
// the log's later writes in that batch wait behind them: a finish never ends
// a log without items its readers were sent. A batch that gives up (past the
// window, or refused) is reported once, with how many logs it touched: their
// runners write them back when the store answers (reply-log.ts).
import type { RedisClient } from '../../storage/redis-connections.ts'
import { isNoScript } from '../../storage/redis-script.ts'
import { pipelined, type SlotCommand } from '../../storage/redis-slots.ts'
import {
  gapLength,
  type TurnLogKeys,
  turnLogError,
  WRITE_SCRIPT,
} from './redis-turn-log-scripts.ts'

/** What the store learns from an acknowledged batch (to feed its mirrors). */
export interface BatchHooks {
  /** `items` landed in the log at offsets start, start + 1, … */
  appended(messageId: string, start: number, items: string[]): void
  /** The log is finished with `length` items. */
  finished(messageId: string, length: number): void
  /** A write failed or its outcome is unknown: the process's view of the log may be stale. */
  failed(messageId: string): void
  /**
   * Items [from, to) of a log as this process appended them, when it still
   * has them all: to write again what a failover lost.
   */
  appendedItems(messageId: string, from: number, to: number): string[] | undefined
}

interface Op {
  kind: 'append' | 'finish'
  messageId: string
  keys: TurnLogKeys
  items: string[]
  fence: number
  /**
   * The offset an append's first item takes, or the length a finish expects;
   * -1 when unknown (an append goes at the end, and is not retried; a
   * finish ends the log at whatever length it has).
   */
  start: number
  resolve: () => void
  reject: (error: Error) => void
}

/** Consecutive appends to one log with one fence become one script call. */
interface Call {
  /** What the script does: the op's kind, but for a repair (an append ahead of a finish too). */
  kind: Op['kind']
  op: Op
  items: string[]
  /** The offset of the call's first item, or the length a finish expects, or -1 (see Op). */
  start: number
  ops: Op[]
  /** Items a failover lost, written again ahead of the call that found them missing. */
  repair?: boolean
  /** A repair was tried for this call already. */
  repaired?: boolean
}

/** Whether a failed call can be sent again without writing anything twice. */
const resendable = (calls: Call[]) =>
  calls.every((call) => call.kind === 'finish' || call.start >= 0)

const MAX_OPS_PER_BATCH = 10_000
/** How long a failing batch is sent again: about a Sentinel or Cluster failover. */
const RETRY_WINDOW_MS = 15_000
/** What a batch that gave up reports (once per batch, not per log). */
export const GAVE_UP_MESSAGE =
  'turn log writes gave up; their runners write the logs back when the store answers'

/** Pause between two tries of a failing batch. */
const RETRY_DELAY_MS = 200
/** Logs whose next offset is kept at most (the oldest goes first; its appends are then not resent). */
const MAX_TRACKED = 100_000
/**
 * Items per script call (merged appends, and all the writes of one call):
 * keeps the arguments a call spreads, and the time one script holds Redis,
 * small. A bigger batch is split over several calls in one pipeline, between
 * logs: the writes of one log in a batch share a call, however many items.
 */
const MAX_ITEMS_PER_CALL = 1_000

export class RedisLogBatcher {
  private queue: Op[] = []
  private inFlight: Promise<void> | undefined
  private scheduled = false
  /**
   * Each log's next offset as this process writes it, with the fence it
   * writes under (undefined: the fence of its first append).
   */
  private readonly next = new Map<string, { fence: number | undefined; offset: number }>()

  constructor(
    private readonly redis: RedisClient,
    /**
     * The sorted set of unfinished logs a log is listed in
     * (redis-turn-log-scripts.ts): the logs of one set share a script call.
     */
    private readonly unfinishedOf: (messageId: string) => string,
    private readonly ttl: { openMs: number; retentionMs: number },
    private readonly hooks: BatchHooks,
    /** Told when a batch gives up (GAVE_UP_MESSAGE). */
    private readonly warn: (message: string, error: unknown) => void = () => {},
  ) {}

  /**
   * The log holds `length` items, and this process writes it from now on,
   * under `fence` (undefined: whichever its next append carries).
   */
  track(messageId: string, fence: number | undefined, length: number): void {
    // Logs left unfinished by their writer here are few; never let them pile up.
    if (this.next.size >= MAX_TRACKED) this.next.delete(this.next.keys().next().value ?? '')
    this.next.set(messageId, { fence, offset: length })
  }

  /** This process no longer writes the log (finished, removed, or a write failed). */
  untrack(messageId: string): void {
    this.next.delete(messageId)
  }

  /** Queues a write; resolves once the batch holding it is acknowledged. */
  write(kind: Op['kind'], messageId: string, keys: TurnLogKeys, items: string[], fence: number) {
    const tracked = this.next.get(messageId)
    let start = -1
    if (tracked && (tracked.fence ?? fence) === fence) {
      tracked.fence = fence
      start = tracked.offset
      if (kind === 'append') tracked.offset += items.length
    }
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ kind, messageId, keys, items, fence, start, resolve, reject })
      if (!this.scheduled && !this.inFlight) {
        this.scheduled = true
        // Writes made in the same tick go together.
        queueMicrotask(() => this.flush())
      }
    })
  }

  /** Resolves once every queued write is acknowledged. */
  async drain(): Promise<void> {
    while (this.inFlight || this.queue.length > 0) {
      if (!this.inFlight) this.flush()
      await this.inFlight
    }
  }

  private flush(): void {
    this.scheduled = false
    if (this.inFlight || this.queue.length === 0) return
    const batch = this.queue.splice(0, MAX_OPS_PER_BATCH)
    // commit settles every op itself; the catch only keeps a bug from wedging the queue.
    this.inFlight = this.commit(batch)
      .catch(() => {})
      .finally(() => {
        this.inFlight = undefined
        this.flush()
      })
  }

  private async commit(batch: Op[]): Promise<void> {
    let scripts = splitIntoScripts(coalesce(batch), this.unfinishedOf)
    const now = Date.now()
    const deadline = now + RETRY_WINDOW_MS
    // The script goes by its SHA1; once a call failed, in full (EVAL): a
    // NOSCRIPT (Redis lost its scripts: a restart, SCRIPT FLUSH, a failover
    // to a replica) means it ran nothing, and EVAL loads it on that node.
    for (let attempt = 0; scripts.length > 0; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS))
      const results = await pipelined(
        this.redis,
        scripts.map((calls) => this.scriptCall(calls, now, attempt === 0)),
      )
      const again: Call[][] = []
      const failed = new Set<string>()
      let failure: Error | undefined
      for (const [index, calls] of scripts.entries()) {
        const [error, replies] = results[index] ?? [new Error('missing reply'), null]
        const retry = error && (isNoScript(error) || (Date.now() < deadline && resendable(calls)))
        if (retry) again.push(calls)
        else if (error || !Array.isArray(replies)) {
          failure = error ?? new Error('unexpected reply to a log write')
          for (const call of calls) failed.add(call.op.messageId)
          this.failAll(calls, failure)
        } else this.settleOrRepair(calls, replies, again)
      }
      if (failure) this.warn(`${GAVE_UP_MESSAGE} (${failed.size} logs)`, failure)
      scripts = again
    }
  }

  /**
   * Settles each call of a script call by its reply, but for a call that
   * found items of its log missing and can write them again: then that
   * repair, the call and the calls of the same log after it (which found
   * the same gap) go again, in order, in `again`.
   */
  private settleOrRepair(calls: Call[], replies: unknown[], again: Call[][]): void {
    let behind: Call[] | undefined
    for (const [at, call] of calls.entries()) {
      const reply = replies[at]
      if (behind?.[0]?.op.messageId === call.op.messageId && gapLength(reply) !== undefined) {
        behind.push(call)
        continue
      }
      behind = undefined
      const repair = this.repairFor(call, reply)
      if (repair) {
        behind = [repair, call]
        again.push(behind)
      } else this.settle(call, reply)
    }
  }

  /** One script call (WRITE_SCRIPT) for the writes of some logs of one set of unfinished logs. */
  private scriptCall(calls: Call[], now: number, bySha: boolean): SlotCommand {
    const first = calls[0] as Call
    const keys: string[] = [this.unfinishedOf(first.op.messageId)]
    const args: (string | number)[] = [now, this.ttl.openMs, this.ttl.retentionMs]
    for (const { kind, op, items, start } of calls) {
      keys.push(op.keys.meta, op.keys.stream)
      if (kind === 'finish') args.push('f', op.fence, 1, start, op.messageId)
      else {
        args.push('a', op.fence, items.length, start)
        for (const item of items) args.push(item)
      }
    }
    return {
      key: first.op.keys.meta,
      add: (pipeline) =>
        bySha
          ? pipeline.evalsha(WRITE_SCRIPT.sha, keys.length, ...keys, ...args)
          : pipeline.eval(WRITE_SCRIPT.lua, keys.length, ...keys, ...args),
    }
  }

  /**
   * For an append or finish refused because its log lost acknowledged items
   * (a failover to a replica that missed them), an append of those items from
   * this process's mirror, to go ahead of it; once per call.
   */
  private repairFor(call: Call, reply: unknown): Call | undefined {
    const length = gapLength(reply)
    if (length === undefined || call.repaired || call.repair) return undefined
    call.repaired = true
    const items = this.hooks.appendedItems(call.op.messageId, length, call.start)
    if (!items || items.length === 0) return undefined
    return { kind: 'append', op: call.op, items, start: length, ops: [], repair: true }
  }

  /** Settles one call's ops with its reply from the script: an offset or length, or an error code. */
  private settle(call: Call, reply: unknown): void {
    // A repair has no ops; the call it went ahead of settles for it.
    if (call.repair) return
    const id = call.op.messageId
    if (typeof reply !== 'number') {
      this.untrack(id)
      this.hooks.failed(id)
      const error = turnLogError(String(reply), id)
      for (const op of call.ops) op.reject(error)
      return
    }
    if (call.kind === 'append') this.hooks.appended(id, reply, call.items)
    else {
      this.untrack(id)
      this.hooks.finished(id, reply)
    }
    for (const op of call.ops) op.resolve()
  }

  private failAll(calls: Call[], error: Error): void {
    for (const call of calls) {
      this.untrack(call.op.messageId)
      this.hooks.failed(call.op.messageId)
      for (const op of call.ops) op.reject(error)
    }
  }
}

/**
 * The calls of each log, in order, packed into script calls of about
 * MAX_ITEMS_PER_CALL items (a finish counts as one), the logs of one set of
 * unfinished logs (one slot, on a Cluster) together: a log's calls are never
 * split between script calls, so one call more can exceed it.
 */
function splitIntoScripts(logs: Call[][], setOf: (messageId: string) => string): Call[][] {
  const bySet = new Map<string, Call[][]>()
  for (const calls of logs) {
    const set = setOf(calls[0]?.op.messageId ?? '')
    const group = bySet.get(set)
    if (group) group.push(calls)
    else bySet.set(set, [calls])
  }
  const scripts: Call[][] = []
  for (const group of bySet.values()) packInto(scripts, group)
  return scripts
}

/** Packs the calls of some logs into script calls of about MAX_ITEMS_PER_CALL items. */
function packInto(scripts: Call[][], logs: Call[][]): void {
  let current: Call[] = []
  let items = 0
  for (const calls of logs) {
    let weight = 0
    for (const call of calls) weight += Math.max(1, call.items.length)
    if (current.length > 0 && items + weight > MAX_ITEMS_PER_CALL) {
      scripts.push(current)
      current = []
      items = 0
    }
    for (const call of calls) current.push(call)
    items += weight
  }
  if (current.length > 0) scripts.push(current)
}

/**
 * The batch's writes as calls, grouped by log (in the order logs first
 * appear) and in queue order within each: consecutive appends to one log with
 * one fence become one call.
 */
function coalesce(batch: Op[]): Call[][] {
  const logs = new Map<string, Call[]>()
  for (const op of batch) {
    let calls = logs.get(op.messageId)
    if (!calls) {
      calls = []
      logs.set(op.messageId, calls)
    }
    const last = calls.at(-1)
    const merge =
      op.kind === 'append' &&
      last?.op.kind === 'append' &&
      last.op.fence === op.fence &&
      (last.start < 0 ? op.start < 0 : op.start === last.start + last.items.length) &&
      last.items.length + op.items.length <= MAX_ITEMS_PER_CALL
    if (last && merge) {
      for (const item of op.items) last.items.push(item)
      last.ops.push(op)
      continue
    }
    calls.push({ kind: op.kind, op, items: [...op.items], start: op.start, ops: [op] })
  }
  return [...logs.values()]
}
