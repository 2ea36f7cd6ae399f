// The in-process TurnLogStore (the embedded default): logs live in a Map of
// this process and die with it. A finished log stays readable for retentionMs,
// then is swept (lazily on access, and by an unref'd interval timer).
import { LocalTurnLog } from './local-turn-log.ts'
import {
  TurnLogFencedError,
  type TurnLogIdentity,
  type TurnLogInfo,
  TurnLogMissingError,
  type TurnLogStore,
} from './turn-log-store.ts'

export interface MemoryTurnLogsOptions {
  /** How long a finished log stays readable. */
  retentionMs: number
  /** Clock for retention (tests inject one). */
  now?: () => number
}

interface Entry {
  identity: TurnLogIdentity
  openedAt: number
  fence: number
  finishedAt: number | undefined
  log: LocalTurnLog
}

/** An in-process TurnLogStore (durable: false). */
export function createMemoryTurnLogs(options: MemoryTurnLogsOptions): TurnLogStore {
  const { retentionMs } = options
  const now = options.now ?? Date.now
  const entries = new Map<string, Entry>()
  let closed = false

  const expired = (entry: Entry) =>
    entry.finishedAt !== undefined && now() - entry.finishedAt >= retentionMs

  function drop(messageId: string, entry: Entry) {
    entries.delete(messageId)
    entry.log.settle('ended')
  }

  function get(messageId: string): Entry | undefined {
    const entry = entries.get(messageId)
    if (entry && expired(entry)) {
      drop(messageId, entry)
      return undefined
    }
    return entry
  }

  /** The entry a write may change, or the error the port names. */
  function writable(messageId: string, fence: number): Entry {
    const entry = get(messageId)
    if (!entry) throw new TurnLogMissingError(messageId)
    if (fence < entry.fence) throw new TurnLogFencedError(messageId)
    return entry
  }

  function sweep() {
    for (const [id, entry] of entries) if (expired(entry)) drop(id, entry)
  }
  const sweeper = setInterval(sweep, Math.max(1, Math.min(retentionMs, 60_000)))
  sweeper.unref?.()

  const info = (entry: Entry): TurnLogInfo => ({
    ...entry.identity,
    length: entry.log.end,
    finished: entry.finishedAt !== undefined,
  })

  return {
    durable: false,

    async open(identity, items = []) {
      if (closed) throw new Error('turn log store is closed')
      if (get(identity.messageId)) throw new Error(`turn log ${identity.messageId} already exists`)
      const log = new LocalTurnLog()
      log.push(items)
      entries.set(identity.messageId, {
        identity: { ...identity },
        openedAt: now(),
        fence: 0,
        finishedAt: undefined,
        log,
      })
    },

    async append(messageId, items, fence) {
      const entry = writable(messageId, fence)
      if (entry.finishedAt !== undefined) throw new Error(`turn log ${messageId} is finished`)
      entry.log.push(items)
    },

    async claim(messageId, fence) {
      const entry = get(messageId)
      if (!entry) return undefined
      if (fence < entry.fence) throw new TurnLogFencedError(messageId)
      entry.fence = fence
      return info(entry)
    },

    async finish(messageId, fence) {
      const entry = writable(messageId, fence)
      if (entry.finishedAt !== undefined) return
      entry.finishedAt = now()
      entry.log.settle('finished')
    },

    async info(messageId) {
      const entry = get(messageId)
      return entry && info(entry)
    },

    async *read(messageId, offset, signal) {
      const entry = get(messageId)
      if (!entry) return
      yield* entry.log.follow(Math.max(0, offset), signal)
    },

    async unfinished(olderThanMs, limit) {
      const found: Entry[] = []
      for (const entry of entries.values())
        if (entry.finishedAt === undefined && now() - entry.openedAt >= olderThanMs)
          found.push(entry)
      found.sort((a, b) => a.openedAt - b.openedAt)
      return found.slice(0, limit).map((entry) => ({ ...entry.identity }))
    },

    async readAll(messageId) {
      return get(messageId)?.log.all() ?? []
    },

    async remove(messageId) {
      const entry = entries.get(messageId)
      if (entry) drop(messageId, entry)
    },

    async close() {
      closed = true
      clearInterval(sweeper)
      for (const [id, entry] of entries) drop(id, entry)
    },
  }
}
