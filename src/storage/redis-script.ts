// Lua scripts on Redis through ioredis, sent by their SHA1 (EVALSHA) rather
// than as text on every call: a script is sent in full only when the server
// answers NOSCRIPT (after a restart or SCRIPT FLUSH), which is what ioredis'
// defineCommand does, without its extra SCRIPT EXISTS round trip in pipelines.
// A NOSCRIPT reply means the script did not run, so running it again is safe.
import { createHash } from 'node:crypto'
import type { RedisClient } from './redis-connections.ts'

export interface RedisScript {
  readonly lua: string
  readonly sha: string
  /** Runs the script on `redis` (EVALSHA, then EVAL on NOSCRIPT). */
  run(
    redis: RedisClient,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown>
}

/** Whether a reply or error is Redis' "no script with this SHA1". */
export const isNoScript = (error: unknown): boolean =>
  error instanceof Error && error.message.startsWith('NOSCRIPT')

export function redisScript(lua: string): RedisScript {
  const sha = createHash('sha1').update(lua).digest('hex')
  return {
    lua,
    sha,
    async run(redis, keys, args) {
      try {
        return await redis.evalsha(sha, keys.length, ...keys, ...args)
      } catch (error) {
        if (!isNoScript(error)) throw error
        return await redis.eval(lua, keys.length, ...keys, ...args)
      }
    },
  }
}
