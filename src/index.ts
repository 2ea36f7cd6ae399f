// Entry point: configuration -> logger and metrics -> dependencies -> app ->
// listen. A bad setting, a locked DATA_DIR or a port another process holds
// stops it at once with one line on stderr. On SIGTERM or SIGINT it reports
// itself not ready, stops accepting, lets running turns finish
// (SHUTDOWN_GRACE_MS), closes its pools and exits 0.
import { createApp } from './app.ts'
import { type Config, ConfigError, loadConfig } from './config.ts'
import { nearCacheMode, openDependencies } from './dependencies.ts'
import { startEventLoopLag } from './observability/event-loop-lag.ts'
import { createLogger } from './observability/logger.ts'
import { createMetrics } from './observability/metrics.ts'
import { checkPortFree, listenFailure, openUrls } from './startup.ts'
import { DataDirLockedError } from './storage/data-dir-lock.ts'

function fail(message: string): never {
  process.stderr.write(`conduit: ${message}\n`)
  process.exit(1)
}

function configOrExit(): Config {
  try {
    return loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message)
    throw error
  }
}

async function main() {
  const config = configOrExit()
  try {
    checkPortFree(config)
  } catch (error) {
    fail(listenFailure(error, config))
  }
  const log = createLogger({ level: config.logLevel })
  const lag = startEventLoopLag()
  const metrics = createMetrics({ eventLoopLag: lag })

  const deps = await openDependencies(config, { log, metrics, lag }).catch((error: unknown) => {
    if (error instanceof DataDirLockedError) fail(error.message)
    fail(`could not start: ${error instanceof Error ? error.message : String(error)}`)
  })

  let app: ReturnType<typeof createApp>
  try {
    app = createApp(deps).listen({
      port: config.port,
      hostname: config.host,
      // Elysia asks for SO_REUSEPORT; with it a second server on a port in use
      // starts "fine" and silently takes half the connections. The port is ours or we exit.
      reusePort: false,
      // Far above the 1 MB limit, which answers 413 with a JSON body itself while
      // reading; Bun's own bare 413 is only a backstop for absurd uploads.
      maxRequestBodySize: 64 * 1024 * 1024,
      // A queued send has no bytes to send until its turn starts; streams ping every 15 s.
      idleTimeout: 120,
    })
  } catch (error) {
    await deps.close().catch(() => {})
    fail(listenFailure(error, config))
  }
  const server = app.server
  const urls = openUrls(config, server?.port ?? config.port)
  log.info(
    {
      url: urls.base,
      variant: config.variant,
      database: deps.db?.kind,
      cache: deps.cache?.kind,
      state: deps.state?.kind,
      // One server, Sentinel or Cluster; a Cluster runs without the near cache.
      ...(config.cacheRedis ? { redis: config.cacheRedis.kind } : {}),
      ...(config.variant === 'full' && deps.cache?.kind === 'redis'
        ? { nearCache: nearCacheMode(config) }
        : {}),
    },
    urls.message,
  )

  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    deps.readiness.shutDown()
    log.info({ signal }, 'shutting down')
    // Stop accepting; open streams keep going until their turns end.
    server?.stop(false)
    await deps
      .close()
      .catch((error: unknown) => log.error({ error: String(error) }, 'close failed'))
    await server?.stop(true)
    log.flush()
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
}

await main()
