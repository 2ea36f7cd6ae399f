// APP_VARIANT=dependency-check: a health endpoint that really reaches Postgres
// and Redis, answering 503 with the reason when either does not answer.
import { Elysia, t } from 'elysia'
import { probe } from '../../src/http/dependency-probe.ts'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db } from '../../src/storage/db.ts'

const tags = ['examples']

/** The health of both dependencies; pure apart from the two probes. */
export async function checkDependencies(db: Db, cache: Cache) {
  const [postgres, redis] = await Promise.all([probe(() => db.ping()), probe(() => cache.ping())])
  if (postgres.ok && redis.ok) return { ok: true as const }
  const failures = [
    postgres.ok ? undefined : `postgres: ${postgres.message}`,
    redis.ok ? undefined : `redis: ${redis.message}`,
  ].filter((failure) => failure !== undefined)
  return { ok: false as const, error: failures.join('; ') }
}

export function dependencyCheckVariant({ db, cache }: { db: Db; cache: Cache }) {
  return new Elysia({ name: 'variant-dependency-check' })
    .get('/', () => ({ message: 'Hello from the dependency-check example.' }), {
      response: { 200: t.Object({ message: t.String() }) },
      detail: { tags, summary: 'Greeting' },
    })
    .get(
      '/health',
      async ({ status }) => {
        const health = await checkDependencies(db, cache)
        return health.ok
          ? status(200, {
              status: 'healthy' as const,
              postgres: 'ok' as const,
              redis: 'ok' as const,
            })
          : status(503, { status: 'unhealthy' as const, error: health.error })
      },
      {
        response: {
          200: t.Object({
            status: t.Literal('healthy'),
            postgres: t.Literal('ok'),
            redis: t.Literal('ok'),
          }),
          503: t.Object({
            status: t.Literal('unhealthy'),
            error: t.String({ description: 'Which dependency failed, and why.' }),
          }),
        },
        detail: { tags, summary: 'Whether Postgres and Redis both answer' },
      },
    )
}
