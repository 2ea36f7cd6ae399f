// Entry point: configuration -> dependencies -> app -> listen. On SIGTERM or
// SIGINT it stops accepting, lets running turns finish (SHUTDOWN_GRACE_MS),
// closes its pools and exits 0.
import { createApp } from './app.ts'
import { ConfigError, loadConfig } from './config.ts'
import { openDependencies } from './dependencies.ts'
import { DataDirLockedError } from './storage/data-dir-lock.ts'

const log = (level: string, msg: string, extra: Record<string, unknown> = {}) =>
  console.log(JSON.stringify({ level, msg, ...extra }))

function fail(message: string): never {
  console.error(`conduit: ${message}`)
  process.exit(1)
}

async function main() {
  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message)
    throw error
  }

  const deps = await openDependencies(config).catch((error: unknown) => {
    if (error instanceof DataDirLockedError) fail(error.message)
    fail(`could not start: ${error instanceof Error ? error.message : String(error)}`)
  })

  const app = createApp(deps).listen({
    port: config.port,
    hostname: config.host,
    // Far above the 1 MB limit, which answers 413 with a JSON body itself while
    // reading; Bun's own bare 413 is only a backstop for absurd uploads.
    maxRequestBodySize: 64 * 1024 * 1024,
    // A queued send has no bytes to send until its turn starts; streams ping every 15 s.
    idleTimeout: 120,
  })
  const server = app.server
  log('info', 'listening', {
    url: `http://${config.host}:${server?.port}`,
    variant: config.variant,
    database: deps.db?.kind,
    cache: deps.cache?.kind,
    state: deps.state?.kind,
  })

  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    log('info', 'shutting down', { signal })
    // Stop accepting; open streams keep going until their turns end.
    server?.stop(false)
    await deps
      .close()
      .catch((error: unknown) => log('error', 'close failed', { error: String(error) }))
    await server?.stop(true)
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
}

await main()
