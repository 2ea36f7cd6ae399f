// The Redis TurnLogStore's mirrors: for each log this process writes, a
// LocalTurnLog of the items it appended, fed when a batch is acknowledged, so
// readers in this process follow the log without reading Redis. A mirror is
// dropped when its log is finished; one that may have gone stale is detached
// (its readers go on from Redis): a write failed (e.g. fenced by a new owner),
// its offsets disagree with Redis, another process finished or wrote the log
// (seen by a periodic check of idle mirrors that readers wait on), or nobody
// wrote to it for openTtlMs. A mirror whose log was removed or expired
// elsewhere ends its readers.
import type { RedisClient } from '../../storage/redis-connections.ts'
import { pipelined } from '../../storage/redis-slots.ts'
import { LocalTurnLog } from './local-turn-log.ts'
import type { BatchHooks } from './redis-log-batcher.ts'
import type { TurnLogKeys } from './redis-turn-log-scripts.ts'

export class RedisLogMirrors implements BatchHooks {
  private readonly mirrors = new Map<string, LocalTurnLog>()
  private readonly timer: ReturnType<typeof setInterval>
  private checking = false
  private closed = false

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: (messageId: string) => TurnLogKeys,
    private readonly openTtlMs: number,
    private readonly checkEveryMs: number,
  ) {
    this.timer = setInterval(() => void this.maintain(), checkEveryMs)
    this.timer.unref?.()
  }

  get(messageId: string): LocalTurnLog | undefined {
    return this.mirrors.get(messageId)
  }

  /** A new log was opened by this process, with these first items. */
  opened(messageId: string, items: readonly string[]): void {
    this.detach(messageId)
    if (this.closed) return
    const mirror = new LocalTurnLog(0)
    mirror.push(items)
    this.mirrors.set(messageId, mirror)
  }

  appended(messageId: string, start: number, items: string[]): void {
    if (this.closed) return
    if (this.mirrors.get(messageId)?.end !== start) this.detach(messageId)
    let mirror = this.mirrors.get(messageId)
    if (!mirror) {
      mirror = new LocalTurnLog(start)
      this.mirrors.set(messageId, mirror)
    }
    mirror.push(items)
  }

  finished(messageId: string, length: number): void {
    const mirror = this.mirrors.get(messageId)
    if (!mirror) return
    this.mirrors.delete(messageId)
    mirror.settle(mirror.end === length ? 'finished' : 'detached')
  }

  failed(messageId: string): void {
    this.detach(messageId)
  }

  appendedItems(messageId: string, from: number, to: number): string[] | undefined {
    const mirror = this.mirrors.get(messageId)
    if (!mirror || from < mirror.base || to > mirror.end || from >= to) return undefined
    return mirror.all().slice(from - mirror.base, to - mirror.base)
  }

  /** Drops a mirror that may not match the log; its readers go on from Redis. */
  detach(messageId: string): void {
    const mirror = this.mirrors.get(messageId)
    if (!mirror) return
    this.mirrors.delete(messageId)
    mirror.settle('detached')
  }

  /** The log is gone: its readers here end. */
  end(messageId: string): void {
    this.mirrors.get(messageId)?.settle('ended')
    this.mirrors.delete(messageId)
  }

  close(): void {
    this.closed = true
    clearInterval(this.timer)
    for (const id of [...this.mirrors.keys()]) this.end(id)
  }

  /**
   * Detaches mirrors nobody wrote to for openTtlMs. Checks the mirrors that
   * readers wait on and this process has not written to for a while against
   * Redis (one pipeline, per node on a Cluster): gone → their readers end; finished or written
   * elsewhere (a new owner took over) → detached.
   */
  private async maintain(): Promise<void> {
    const now = Date.now()
    const suspects: [string, LocalTurnLog][] = []
    for (const [id, mirror] of this.mirrors)
      if (mirror.touchedAt < now - this.openTtlMs) this.detach(id)
      else if (mirror.waited && mirror.touchedAt < now - this.checkEveryMs)
        suspects.push([id, mirror])
    if (suspects.length === 0 || this.checking) return
    this.checking = true
    const results = await pipelined(
      this.redis,
      suspects.map(([id]) => {
        const { meta } = this.keys(id)
        return { key: meta, add: (pipeline) => pipeline.hmget(meta, 'length', 'finished') }
      }),
    )
    this.checking = false
    results.forEach(([error, reply], index) => {
      const [id, mirror] = suspects[index] ?? []
      if (error || !id || !mirror || this.mirrors.get(id) !== mirror) return
      const [length, finished] = reply as (string | null)[]
      if (length == null) this.end(id)
      else if (finished === '1' || Number(length) !== mirror.end) this.detach(id)
    })
  }
}
