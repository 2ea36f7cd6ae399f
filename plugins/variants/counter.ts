// APP_VARIANT=counter: a visit counter kept under counter:visits in the state
// store (REDIS_STATE_URL: not the cache database, so a cache flush cannot
// reset it), so it survives restarts of the process when that is Redis.
import { Type } from '@sinclair/typebox'
import { Elysia, t } from 'elysia'
import { unavailable } from '../../src/errors.ts'
import { probe } from '../../src/http/dependency-probe.ts'
import { ErrorBody } from '../../src/http/error-schema.ts'
import type { Cache } from '../../src/storage/cache.ts'

export const COUNTER_KEY = 'counter:visits'

const tags = ['examples']
const Visits = t.Object({ message: t.String(), visits: Type.Integer({ minimum: 0 }) })

/** Runs a cache command; a failure means the counter store is down (503). */
async function counterStore<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch {
    throw unavailable('The counter store (Redis) is not reachable.')
  }
}

export function counterVariant({ counters: cache }: { counters: Cache }) {
  return new Elysia({ name: 'variant-counter' })
    .get(
      '/',
      async () => ({
        message: 'Hello from the counter example.',
        visits: await counterStore(() => cache.incr(COUNTER_KEY)),
      }),
      {
        response: { 200: Visits, 503: ErrorBody },
        detail: { tags, summary: 'Count this visit and return the total' },
      },
    )
    .get(
      '/health',
      async ({ status }) => {
        const redis = await probe(() => cache.ping())
        return redis.ok
          ? status(200, { status: 'healthy' as const, redis: 'connected' as const })
          : status(503, { status: 'unhealthy' as const, redis: 'disconnected' as const })
      },
      {
        response: {
          200: t.Object({ status: t.Literal('healthy'), redis: t.Literal('connected') }),
          503: t.Object({ status: t.Literal('unhealthy'), redis: t.Literal('disconnected') }),
        },
        detail: { tags, summary: 'Whether the counter store answers' },
      },
    )
    .post(
      '/reset',
      async () => {
        await counterStore(() => cache.set(COUNTER_KEY, '0'))
        return { message: 'Counter reset.', visits: 0 }
      },
      {
        response: { 200: Visits, 503: ErrorBody },
        detail: { tags, summary: 'Set the counter to 0' },
      },
    )
}
