// The load balancer in front of several instances: nginx (Debian's nginx-light
// will do) with bench/nginx/bench-lb.conf, its placeholders filled in, run from
// a temporary prefix directory on a free loopback port. Its workers are killed
// with it whatever way the harness exits. Undefined when there is no nginx:
// the caller then spreads clients over the instances itself.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { assertLoopback } from './backend.ts'
import { tail } from './children.ts'
import { freePort, withFileLimit } from './server.ts'

const TEMPLATE = resolve(import.meta.dir, '../nginx/bench-lb.conf')
const CANDIDATES = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx']

export interface LoadBalancer {
  url: string
  /** The master's pid; its workers are its children. */
  pid: number
  /** The master and its workers. */
  processIds(): number[]
  stop(): Promise<void>
}

/**
 * The distinct messages of an nginx error log, most frequent first, without
 * their time, pids, connection numbers and client/request details.
 */
function errorCauses(path: string, most = 10): string[] {
  if (!existsSync(path)) return []
  const counts = new Map<string, number>()
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line.trim() === '') continue
    const message = line
      .replace(/^\S+ \S+ /, '')
      .replace(/\d+#\d+: (\*\d+ )?/, '')
      .replace(/, client: .*$/, '')
    counts.set(message, (counts.get(message) ?? 0) + 1)
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, most)
    .map(([message, count]) => `  ${count} × ${message}`)
}

export function findNginx(): string | undefined {
  return Bun.which('nginx') ?? CANDIDATES.find((path) => existsSync(path))
}

/** Pids of `pid`'s direct children (nginx's workers), from /proc. */
function childrenOf(pid: number): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (parent === pid) found.push(Number(entry))
    } catch {}
  }
  return found
}

function killTree(pid: number, signal: NodeJS.Signals): void {
  for (const child of childrenOf(pid)) {
    try {
      process.kill(child, signal)
    } catch {}
  }
  try {
    process.kill(pid, signal)
  } catch {}
}

export async function startLoadBalancer(upstreams: string[]): Promise<LoadBalancer | undefined> {
  const nginx = findNginx()
  if (!nginx) return undefined
  for (const url of upstreams) assertLoopback('an upstream of the load balancer', url)
  const port = await freePort()
  const prefix = mkdtempSync(join(tmpdir(), 'conduit-bench-nginx-'))
  const servers = upstreams
    .map((url) => `        server ${new URL(url).host} max_fails=1 fail_timeout=10s;`)
    .join('\n')
  const config = readFileSync(TEMPLATE, 'utf8')
    .replace('__UPSTREAMS__', servers)
    .replace('__PORT__', String(port))
  const configPath = join(prefix, 'nginx.conf')
  writeFileSync(configPath, config)
  const child = Bun.spawn(
    withFileLimit([nginx, '-p', `${prefix}/`, '-c', configPath, '-e', join(prefix, 'error.log')]),
    { stdin: 'ignore', stdout: 'ignore', stderr: 'pipe' },
  )
  const errors = tail(child.stderr)
  // Not tracked by children.ts, whose SIGKILL would orphan the workers.
  const onExit = () => {
    killTree(child.pid, 'SIGKILL')
    rmSync(prefix, { recursive: true, force: true })
  }
  process.on('exit', onExit)
  const url = `http://127.0.0.1:${port}`
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      const exited = await Promise.race([
        child.exited.then(() => true),
        Bun.sleep(5_000).then(() => false),
      ])
      if (!exited) killTree(child.pid, 'SIGKILL')
    }
    await child.exited
    process.off('exit', onExit)
    // Why nginx answered 502 (an upstream refused, reset or timed out): its
    // error log, each distinct message once with its count, before it goes.
    const causes = errorCauses(join(prefix, 'error.log'))
    if (causes.length > 0) console.error(`nginx's error log:\n${causes.join('\n')}`)
    rmSync(prefix, { recursive: true, force: true })
  }
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break
    const ok = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) })
      .then((response) => response.ok)
      .catch(() => false)
    if (ok)
      return { url, pid: child.pid, processIds: () => [child.pid, ...childrenOf(child.pid)], stop }
    await Bun.sleep(100)
  }
  const log = existsSync(join(prefix, 'error.log'))
    ? readFileSync(join(prefix, 'error.log'), 'utf8')
    : ''
  await stop()
  throw new Error(`nginx did not start:\n${errors()}${log}`.trim())
}
