// Group commit for the Redis TurnLogStore: appends and finishes of every log
// are queued in the process and sent as ONE pipeline while no pipeline is in
// flight; the next batch leaves when the previous one is acknowledged. So N
// busy logs cost about one round trip per batch instead of one per append,
// and the writes of one log stay in call order (one queue, batches in series).
import type Redis from 'ioredis'
import {
  APPEND_SCRIPT,
  FINISH_SCRIPT,
  sha1,
  type TurnLogKeys,
  turnLogError,
} from './redis-turn-log-scripts.ts'

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
/** Merged appends stay well under the argument count a call can spread. */
const MAX_ITEMS_PER_CALL = 1_000
const APPEND_SHA = sha1(APPEND_SCRIPT)
const FINISH_SHA = sha1(FINISH_SCRIPT)

export class RedisLogBatcher {
  private queue: Op[] = []
  private inFlight: Promise<void> | undefined
  private scheduled = false

  constructor(
    private readonly redis: Redis,
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
    const calls = coalesce(batch)
    // Loading the scripts first costs two tiny commands and makes EVALSHA safe
    // after a restart of Redis, without a NOSCRIPT retry that could reorder writes.
    const pipeline = this.redis
      .pipeline()
      .script('LOAD', APPEND_SCRIPT)
      .script('LOAD', FINISH_SCRIPT)
    for (const { op, items } of calls) {
      const { meta, stream } = op.keys
      if (op.kind === 'append')
        pipeline.evalsha(APPEND_SHA, 2, meta, stream, op.fence, this.ttl.openMs, ...items)
      else pipeline.evalsha(FINISH_SHA, 2, meta, stream, op.fence, this.ttl.retentionMs)
    }
    let results: [Error | null, unknown][] | null
    try {
      results = await pipeline.exec()
    } catch (error) {
      results = null
      this.failAll(calls, error instanceof Error ? error : new Error(String(error)))
      return
    }
    if (!results) return this.failAll(calls, new Error('Redis pipeline was aborted'))
    calls.forEach((call, index) => {
      const [error, reply] = results[index + 2] ?? [new Error('missing reply'), null]
      const id = call.op.messageId
      if (error) {
        this.hooks.failed(id)
        const mapped = turnLogError(error, id)
        for (const op of call.ops) op.reject(mapped)
        return
      }
      if (call.op.kind === 'append') this.hooks.appended(id, Number(reply), call.items)
      else this.hooks.finished(id, Number(reply))
      for (const op of call.ops) op.resolve()
    })
  }

  private failAll(calls: Call[], error: Error): void {
    for (const call of calls) {
      this.hooks.failed(call.op.messageId)
      for (const op of call.ops) op.reject(error)
    }
  }
}

function coalesce(batch: Op[]): Call[] {
  const calls: Call[] = []
  const lastOfLog = new Map<string, Call>()
  for (const op of batch) {
    const last = lastOfLog.get(op.messageId)
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
    const call: Call = { op, items: [...op.items], ops: [op] }
    calls.push(call)
    lastOfLog.set(op.messageId, call)
  }
  return calls
}
