// Entry point: configuration -> logger and metrics -> dependencies -> app ->
// listen. A bad setting, a locked DATA_DIR or a port another process holds
// stops it at once with one line on stderr. On SIGTERM or SIGINT it reports
// itself not ready while it still serves (SHUTDOWN_DRAIN_MS), stops accepting,
// lets running turns finish (SHUTDOWN_GRACE_MS, the drain included), stops
// the rest, ends every open stream, closes its pools and exits 0 - within the
// grace and a fixed margin whatever the stores do (shutdown-plan.ts).
import { createApp } from './app.ts'
import { type Config, ConfigError, loadConfig } from './config.ts'
import { nearCacheMode, openDependencies } from './dependencies.ts'
import { keylessModels } from './models-config.ts'
import { startEventLoopLag } from './observability/event-loop-lag.ts'
import { createLogger } from './observability/logger.ts'
import { createMetrics } from './observability/metrics.ts'
import { shutdownPlan } from './shutdown-plan.ts'
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
  const keyless = keylessModels(config.models)
  if (keyless.length > 0)
    log.warn(
      { models: keyless },
      'no API key for these openai models: their server must take requests without one',
    )

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
      // No limit of Bun's: its 413 has no body (CONTRACT §19 wants one on every
      // error). The app refuses a declared length past any route's limit before
      // routing, and stops reading a body at its limit or deadline (body-limit.ts).
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      // A queued send has no bytes to send until its turn starts; streams ping every 15 s.
      idleTimeout: 120,
    })
  } catch (error) {
    await deps.close().catch(() => {})
    fail(listenFailure(error, config))
  }
  const server = app.server
  // Starting stalls the loop (PGlite, first compiles); serving is judged from here on.
  lag.reset()
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
    const plan = shutdownPlan(config)
    // Whatever a store does (frozen, dead, gone), the process is gone by then.
    const hardStop = setTimeout(() => {
      log.warn(
        { signal, afterMs: plan.hardStopMs },
        'shutdown: stores did not close in time; exiting',
      )
      log.flush()
      process.exit(0)
    }, plan.hardStopMs)
    hardStop.unref?.()
    deps.readiness.shutDown()
    log.info({ signal, drainMs: plan.drainMs }, 'shutting down: not ready, still serving')
    // Load balancers take a moment to stop sending here (a Kubernetes rollout
    // removes endpoints seconds after SIGTERM): serve until then.
    await new Promise((resolve) => setTimeout(resolve, plan.drainMs))
    // Stop accepting; open streams keep going until their turns end.
    server?.stop(false)
    const left = (await deps.conversations?.close(plan.turnsMs, plan.stopMs)) ?? []
    for (const turn of left)
      log.warn(
        turn,
        turn.stored
          ? 'shutdown: a turn was stored, but its stream could not be ended in the turn state'
          : 'shutdown: a turn could not be stored in time; its text so far is left for a takeover',
      )
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
