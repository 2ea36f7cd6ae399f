// What the entry point tells a person at startup: the URL to open (with a
// host a browser can reach: `localhost` when bound to every interface), and
// a one-line reason when the port cannot be had.
import type { Config } from './config.ts'

const ALL_INTERFACES = new Set(['0.0.0.0', '::', '[::]'])

/** The base URL a person can click, and the startup message naming the pages. */
export function openUrls(config: Pick<Config, 'host' | 'variant'>, port: number) {
  const host = ALL_INTERFACES.has(config.host)
    ? 'localhost'
    : config.host.includes(':')
      ? `[${config.host}]`
      : config.host
  const base = `http://${host}:${port}`
  const message =
    config.variant === 'full'
      ? `listening on ${base} - open ${base}/playground to try it, ${base}/docs for the API`
      : `listening on ${base} - ${base}/ (${config.variant} example), ${base}/docs for the API`
  return { base, message }
}

/**
 * Throws what listening would throw if host:port cannot be had, by binding it
 * for a moment: checked before the stores open, so a port in use stops the
 * process at once rather than after the embedded database has started.
 */
export function checkPortFree(config: Pick<Config, 'host' | 'port'>): void {
  if (config.port === 0) return
  const probe = Bun.serve({
    hostname: config.host,
    port: config.port,
    reusePort: false,
    fetch: () => new Response(null, { status: 503 }),
  })
  probe.stop(true)
}

/** One line saying why listening failed: the port is taken, the address is not ours, or else. */
export function listenFailure(error: unknown, config: Pick<Config, 'host' | 'port'>): string {
  const code = (error as { code?: unknown } | undefined)?.code
  const where = `${config.host}:${config.port}`
  if (code === 'EADDRINUSE')
    return `cannot listen on ${where}: the port is in use by another process (set PORT to a free one)`
  if (code === 'EADDRNOTAVAIL')
    return `cannot listen on ${where}: HOST is not an address of this machine`
  if (code === 'EACCES')
    return `cannot listen on ${where}: permission denied (ports below 1024 need privileges)`
  const message = error instanceof Error ? error.message : String(error)
  return `cannot listen on ${where}: ${message.split('\n')[0]}`
}
