// In-process Cache adapter with the same semantics as Redis: expiry, lists,
// trim, delete, flush. Expired keys are dropped on access and by a sweep.
import { type Cache, FILL_WINDOW_MS } from './cache.ts'

interface Entry {
  value: string | string[]
  /** Epoch ms; undefined = no expiry. */
  expiresAt: number | undefined
}

const SWEEP_INTERVAL_MS = 30_000

export class WrongTypeError extends Error {
  constructor() {
    super('WRONGTYPE Operation against a key holding the wrong kind of value')
  }
}

export function createMemoryCache(now: () => number = Date.now): Cache {
  const entries = new Map<string, Entry>()
  /** Fills in progress: key -> token and when it lapses. */
  const fills = new Map<string, { token: string; until: number }>()

  const live = (key: string): Entry | undefined => {
    const entry = entries.get(key)
    if (entry?.expiresAt !== undefined && entry.expiresAt <= now()) {
      entries.delete(key)
      return undefined
    }
    return entry
  }
  const expiry = (ttlSeconds: number | undefined) =>
    ttlSeconds === undefined ? undefined : now() + ttlSeconds * 1000
  const stringAt = (key: string) => {
    const value = live(key)?.value
    if (Array.isArray(value)) throw new WrongTypeError()
    return value
  }
  const listAt = (key: string) => {
    const value = live(key)?.value
    if (typeof value === 'string') throw new WrongTypeError()
    return value
  }

  const sweep = setInterval(() => {
    for (const key of entries.keys()) live(key)
    for (const [key, started] of fills) if (started.until <= now()) fills.delete(key)
  }, SWEEP_INTERVAL_MS)
  sweep.unref?.()

  return {
    kind: 'memory',
    get: async (key) => stringAt(key) ?? null,
    async set(key, value, ttlSeconds) {
      entries.set(key, { value, expiresAt: expiry(ttlSeconds) })
    },
    async del(...keys) {
      let deleted = 0
      for (const key of keys) {
        fills.delete(key)
        if (live(key) && entries.delete(key)) deleted++
      }
      return deleted
    },
    async startFill(key) {
      const token = crypto.randomUUID()
      fills.set(key, { token, until: now() + FILL_WINDOW_MS })
      return token
    },
    async fill(key, token, value, ttlSeconds) {
      const started = fills.get(key)
      if (started?.token !== token || started.until <= now()) return false
      fills.delete(key)
      entries.set(key, { value, expiresAt: expiry(ttlSeconds) })
      return true
    },
    async incr(key) {
      const current = stringAt(key)
      const value = current === undefined ? 0 : Number(current)
      if (!Number.isSafeInteger(value)) throw new Error('ERR value is not an integer')
      entries.set(key, { value: String(value + 1), expiresAt: live(key)?.expiresAt })
      return value + 1
    },
    async ttl(key) {
      const entry = live(key)
      if (!entry) return -2
      if (entry.expiresAt === undefined) return -1
      return Math.max(0, Math.round((entry.expiresAt - now()) / 1000))
    },
    async listPush(key, values, maxLength, ttlSeconds) {
      if (values.length === 0) return
      const list = [...(listAt(key) ?? []), ...values].slice(-maxLength)
      entries.set(key, { value: list, expiresAt: expiry(ttlSeconds) })
    },
    async listPushIfPresent(key, values, maxLength, ttlSeconds) {
      const list = listAt(key)
      if (list === undefined || values.length === 0) return false
      entries.set(key, {
        value: [...list, ...values].slice(-maxLength),
        expiresAt: expiry(ttlSeconds),
      })
      return true
    },
    async listReplace(key, values, ttlSeconds) {
      if (values.length === 0) entries.delete(key)
      else entries.set(key, { value: [...values], expiresAt: expiry(ttlSeconds) })
    },
    listAll: async (key) => [...(listAt(key) ?? [])],
    async flush() {
      entries.clear()
      fills.clear()
    },
    async ping() {},
    async close() {
      clearInterval(sweep)
      entries.clear()
      fills.clear()
    },
  }
}
