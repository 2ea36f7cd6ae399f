// One deployment for the streaming scenarios: N instances of the service on
// the same database and Redis, and with more than one, a load balancer in front
// (nginx, see nginx.ts) or, without nginx on the machine, clients that go to
// each instance in turn. Needs shared state (Redis) for more than one.
import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import type { Backend } from './backend.ts'
import { mainThreadSeconds, meterCpu, processCpuSeconds } from './cpu.ts'
import { type LoadBalancer, startLoadBalancer } from './nginx.ts'
import { meterPools } from './pg-activity.ts'
import { meterRedis } from './redis-stats.ts'
import { type RunningServer, startServer } from './server.ts'

export type Routing = 'direct' | 'nginx round robin' | 'client round robin (no nginx)'

export interface Cluster {
  servers: RunningServer[]
  loadBalancer: LoadBalancer | undefined
  /** Where clients send: client i uses targets[i % length]. */
  targets: string[]
  routing: Routing
  stop(): Promise<void>
}

/** Where `--profile` writes the servers' CPU profiles (Markdown, one per server). */
export const PROFILES_DIR = resolve(import.meta.dir, '../results/profiles')

/**
 * Starts the deployment. With `profileName`, every server runs under Bun's
 * CPU profiler and writes bench/results/profiles/<profileName>-server<k>.md
 * when it stops.
 */
export async function startCluster(
  backend: Backend,
  instances: number,
  chunkDelayMs: number,
  profileName?: string,
): Promise<Cluster> {
  if (instances > 1 && !backend.stateUrl)
    throw new Error(
      `${instances} instances need shared turn state: set REDIS_URL (and DATABASE_URL) to run them`,
    )
  const resumeTokenSecret = randomBytes(32).toString('hex')
  const started = await Promise.allSettled(
    Array.from({ length: instances }, (_, index) =>
      startServer({
        backend,
        chunkDelayMs,
        resumeTokenSecret,
        ...(profileName
          ? { profile: { dir: PROFILES_DIR, name: `${profileName}-server${index + 1}` } }
          : {}),
      }),
    ),
  )
  const servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
  const stopServers = () => Promise.all(servers.map((server) => server.stop())).then(() => {})
  const failed = started.find((result) => result.status === 'rejected')
  if (failed) {
    await stopServers()
    throw failed.reason
  }
  if (instances === 1)
    return {
      servers,
      loadBalancer: undefined,
      targets: servers.map((server) => server.url),
      routing: 'direct',
      stop: stopServers,
    }
  let loadBalancer: LoadBalancer | undefined
  try {
    loadBalancer = await startLoadBalancer(servers.map((server) => server.url))
  } catch (error) {
    await stopServers()
    throw error
  }
  return {
    servers,
    loadBalancer,
    targets: loadBalancer ? [loadBalancer.url] : servers.map((server) => server.url),
    routing: loadBalancer ? 'nginx round robin' : 'client round robin (no nginx)',
    async stop() {
      await loadBalancer?.stop()
      await stopServers()
    },
  }
}

/** CPU seconds so far of each part of the deployment. */
export function cpuReadings(cluster: Cluster): Record<string, number | undefined> {
  const readings: Record<string, number | undefined> = {}
  cluster.servers.forEach((server, index) => {
    readings[`server ${index + 1}`] = processCpuSeconds(server.pid)
  })
  if (cluster.loadBalancer)
    readings['nginx (master + workers)'] = cluster.loadBalancer
      .processIds()
      .reduce((sum, pid) => sum + (processCpuSeconds(pid) ?? 0), 0)
  return readings
}

/** The machine's Redis and Postgres servers, by label and process name (whole servers: other users show in them too). */
const SERVER_PROCESSES = {
  'redis-server (whole server)': 'redis-server',
  'postgres (every backend)': 'postgres',
}

/** Seconds so far each server's main thread (its event loop) ran, and waited for a CPU. */
export function runQueueReadings(cluster: Cluster): Record<string, number | undefined> {
  const readings: Record<string, number | undefined> = {}
  cluster.servers.forEach((server, index) => {
    const main = mainThreadSeconds(server.pid)
    readings[`server ${index + 1} running`] = main?.running
    readings[`server ${index + 1} waiting`] = main?.waiting
  })
  return readings
}

/**
 * The meters every streaming scenario starts on its deployment: CPU of each
 * part and of this process (as `harnessLabel`), the servers' run-queue waits,
 * the state Redis's command counters and the Postgres pools' use (when those
 * backends are real). Each is stopped by the scenario.
 */
export async function meterCluster(cluster: Cluster, backend: Backend, harnessLabel: string) {
  const cpu = meterCpu(() => {
    const usage = process.cpuUsage()
    return { ...cpuReadings(cluster), [harnessLabel]: (usage.user + usage.system) / 1e6 }
  }, SERVER_PROCESSES)
  const waits = meterCpu(() => runQueueReadings(cluster))
  const redis = backend.stateUrl ? await meterRedis(backend.stateUrl) : undefined
  const pools = backend.databaseUrl.startsWith('postgres')
    ? meterPools(
        backend.databaseUrl,
        cluster.servers.map((server) => server.pid),
      )
    : undefined
  return { cpu, waits, redis, pools }
}
