// Group commit for the Redis TurnLogStore: appends and finishes of every log
// are queued in the process and sent together while no batch is in flight;
// the next batch leaves when the previous one is acknowledged. A batch is one
// round trip and one script call (WRITE_SCRIPT) for all the logs it touches,
// not one per log or per item, and the writes of one log stay in call order
// (one queue, batches in series, a log's writes in queue order inside one
// script call).
import type { RedisClient } from '../storage/redis-connections.ts'
import { isNoScript } from '../storage/redis-script.ts'
import { type TurnLogKeys, turnLogError, WRITE_SCRIPT } from './redis-turn-log-scripts.ts'

/** What the store learns from an acknowledged batch (to feed its mirrors). */
export interface BatchHooks {
  /** `items` landed in the log at offsets start, start + 1, … */
  appended(messageId: string, start: number, items: string[]): void
  /** The log is finished with `length` items. */
  finished(messageId: string, length: number): void
  /** A write failed or its outcome is unknown: the process's view of the log may be stale. */
  failed(messageId: string): void
}

interface Op {
  kind: 'append' | 'finish'
  messageId: string
  keys: TurnLogKeys
  items: string[]
  fence: number
  resolve: () => void
  reject: (error: Error) => void
}

/** Consecutive appends to one log with one fence become one script call. */
interface Call {
  op: Op
  items: string[]
  ops: Op[]
}

const MAX_OPS_PER_BATCH = 10_000
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

  constructor(
    private readonly redis: RedisClient,
    /** The sorted set of unfinished logs (redis-turn-log-scripts.ts). */
    private readonly unfinishedKey: string,
    private readonly ttl: { openMs: number; retentionMs: number },
    private readonly hooks: BatchHooks,
  ) {}

  /** Queues a write; resolves once the batch holding it is acknowledged. */
  write(kind: Op['kind'], messageId: string, keys: TurnLogKeys, items: string[], fence: number) {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ kind, messageId, keys, items, fence, resolve, reject })
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
    let scripts = splitIntoScripts(coalesce(batch))
    const now = Date.now()
    // The script goes by its SHA1. Calls refused with NOSCRIPT (Redis lost its
    // scripts: a restart, SCRIPT FLUSH) ran nothing, so they go once more with
    // the script loaded first; as a log's writes share one call, no write of
    // theirs can have landed after them meanwhile.
    for (let attempt = 0; attempt < 2 && scripts.length > 0; attempt++) {
      const pipeline = this.redis.pipeline()
      if (attempt > 0) pipeline.script('LOAD', WRITE_SCRIPT.lua)
      for (const calls of scripts) {
        const keys: string[] = [this.unfinishedKey]
        const args: (string | number)[] = [now, this.ttl.openMs, this.ttl.retentionMs]
        for (const { op, items } of calls) {
          keys.push(op.keys.meta, op.keys.stream)
          if (op.kind === 'finish') args.push('f', op.fence, 1, op.messageId)
          else {
            args.push('a', op.fence, items.length)
            for (const item of items) args.push(item)
          }
        }
        pipeline.evalsha(WRITE_SCRIPT.sha, keys.length, ...keys, ...args)
      }
      let results: [Error | null, unknown][] | null
      try {
        results = await pipeline.exec()
      } catch (error) {
        this.failAll(scripts.flat(), error instanceof Error ? error : new Error(String(error)))
        return
      }
      if (!results) return this.failAll(scripts.flat(), new Error('Redis pipeline was aborted'))
      const first = attempt > 0 ? 1 : 0
      const again: Call[][] = []
      for (const [index, calls] of scripts.entries()) {
        const [error, replies] = results[first + index] ?? [new Error('missing reply'), null]
        if (error && isNoScript(error) && attempt === 0) again.push(calls)
        else if (error || !Array.isArray(replies))
          this.failAll(calls, error ?? new Error('unexpected reply to a log write'))
        else for (const [at, call] of calls.entries()) this.settle(call, replies[at])
      }
      scripts = again
    }
  }

  /** Settles one call's ops with its reply from the script: an offset or length, or an error code. */
  private settle(call: Call, reply: unknown): void {
    const id = call.op.messageId
    if (typeof reply !== 'number') {
      this.hooks.failed(id)
      const error = turnLogError(String(reply), id)
      for (const op of call.ops) op.reject(error)
      return
    }
    if (call.op.kind === 'append') this.hooks.appended(id, reply, call.items)
    else this.hooks.finished(id, reply)
    for (const op of call.ops) op.resolve()
  }

  private failAll(calls: Call[], error: Error): void {
    for (const call of calls) {
      this.hooks.failed(call.op.messageId)
      for (const op of call.ops) op.reject(error)
    }
  }
}

/**
 * The calls of each log, in order, packed into script calls of about
 * MAX_ITEMS_PER_CALL items (a finish counts as one): a log's calls are never
 * split between script calls, so one call more can exceed it.
 */
function splitIntoScripts(logs: Call[][]): Call[][] {
  const scripts: Call[][] = []
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
  return scripts
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
      last.items.length + op.items.length <= MAX_ITEMS_PER_CALL
    if (last && merge) {
      for (const item of op.items) last.items.push(item)
      last.ops.push(op)
      continue
    }
    calls.push({ op, items: [...op.items], ops: [op] })
  }
  return [...logs.values()]
}
