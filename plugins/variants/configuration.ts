// APP_VARIANT=configuration: shows the configuration the process runs with,
// every value a string as the spec's table says, with any database password
// replaced by *** (CONTRACT §7).
import { Elysia, t } from 'elysia'
import { type Config, maskUrlPassword } from '../../src/config.ts'

const tags = ['examples']

/** The body of GET / for this configuration; pure, so tests can call it. */
export function describeConfiguration(config: Config) {
  return {
    environment: config.appEnv ?? 'production',
    debug: config.debug ?? 'false',
    database:
      config.databaseUrl === undefined ? 'not configured' : maskUrlPassword(config.databaseUrl),
    features: {
      hot_reload: config.hotReload ?? 'false',
      debug_toolbar: config.debugToolbar ?? 'false',
    },
  }
}

export function configurationVariant({ config }: { config: Config }) {
  const body = describeConfiguration(config)
  return new Elysia({ name: 'variant-configuration' })
    .get('/', () => body, {
      response: {
        200: t.Object({
          environment: t.String({ description: 'APP_ENV, default `production`.' }),
          debug: t.String({ description: 'DEBUG, default `false`.' }),
          database: t.String({
            description: 'DATABASE_URL with any password shown as ***, or `not configured`.',
          }),
          features: t.Object({
            hot_reload: t.String({ description: 'HOT_RELOAD, default `false`.' }),
            debug_toolbar: t.String({ description: 'DEBUG_TOOLBAR, default `false`.' }),
          }),
        }),
      },
      detail: { tags, summary: 'The configuration this process runs with' },
    })
    .get('/health', () => ({ status: 'healthy' as const }), {
      response: { 200: t.Object({ status: t.Literal('healthy') }) },
      detail: { tags, summary: 'Always healthy: this example has no dependencies' },
    })
}
