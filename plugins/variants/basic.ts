// APP_VARIANT=basic: the smallest example, a greeting with the host name and
// the environment it runs in (spec "Minimal example endpoints").
import { hostname } from 'node:os'
import { Elysia, t } from 'elysia'
import type { Config } from '../../src/config.ts'

const tags = ['examples']

export function basicVariant({ config }: { config: Config }) {
  return new Elysia({ name: 'variant-basic' })
    .get(
      '/',
      () => ({
        message: 'Hello from the basic example.',
        hostname: hostname(),
        environment: config.appEnv ?? 'development',
      }),
      {
        response: {
          200: t.Object({
            message: t.String(),
            hostname: t.String({ description: 'Host name of the serving machine or container.' }),
            environment: t.String({ description: 'APP_ENV, default `development`.' }),
          }),
        },
        detail: { tags, summary: 'Greeting, host name and environment' },
      },
    )
    .get('/health', () => ({ status: 'healthy' as const }), {
      response: { 200: t.Object({ status: t.Literal('healthy') }) },
      detail: { tags, summary: 'Always healthy: this example has no dependencies' },
    })
}
