// `bun run bench/clients/compare.ts`: ioredis against Bun's RedisClient for
// the cache port (issue 9), side by side in one run. Two measures, in rotating
// rounds so a noisy minute hits every contender alike:
//  - the clients alone: 32 concurrent GET loops on one ~2 KB value;
//  - minimal Elysia servers answering that value from each client, from the
//    near cache, and from a constant (the bare route), loaded by the harness's generator (wrk);
//    req/s and the server's CPU per request.
// Needs REDIS_URL (loopback); writes bench/results/<date>-<commit>-redis-clients.md.
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { RedisClient } from 'bun'
import Redis from 'ioredis'
import { assertLoopback } from '../harness/backend.ts'
import { terminate, track } from '../harness/children.ts'
import { processCpuSeconds } from '../harness/cpu.ts'
import { runLoad, WRK } from '../harness/load.ts'
import { describeMachine, machineLine } from '../harness/machine.ts'
import { resultName } from '../harness/result-name.ts'

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
assertLoopback('REDIS_URL', url)
const ROUNDS = Number(process.env.ROUNDS ?? 3)
const SECONDS = Number(process.env.SECONDS ?? 3)
const CONNECTIONS = 32
const key = `bench:clients:${randomBytes(4).toString('hex')}`
const value = JSON.stringify({ conversation_id: key, messages: 'x'.repeat(2_000) })
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0

async function clientLoops(
  get: () => Promise<unknown>,
): Promise<{ opsPerSec: number; cpuUsPerOp: number }> {
  let ops = 0
  const deadline = performance.now() + SECONDS * 1000
  const cpu = process.cpuUsage()
  const started = performance.now()
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (performance.now() < deadline) {
        await get()
        ops++
      }
    }),
  )
  const used = process.cpuUsage(cpu)
  return {
    opsPerSec: ops / ((performance.now() - started) / 1000),
    cpuUsPerOp: (used.user + used.system) / ops,
  }
}

async function startChild(client: string) {
  const child = track(
    Bun.spawn([process.execPath, 'run', join(import.meta.dir, 'server.ts')], {
      env: { ...process.env, REDIS_URL: url, CLIENT: client, BENCH_KEY: key, BENCH_VALUE: value },
      stdout: 'pipe',
      stderr: 'inherit',
    }),
  )
  const reader = child.stdout.getReader()
  const { value: line } = await reader.read()
  const port = Number(new TextDecoder().decode(line).trim())
  const base = `http://127.0.0.1:${port}`
  const check = await (await fetch(`${base}/h`)).text()
  if (check !== value) throw new Error(`${client}: wrong answer`)
  return { client, base, pid: child.pid, stop: () => terminate(child, 5_000) }
}

const setup = new Redis(url)
await setup.set(key, value, 'EX', 3_600)
const ioredis = new Redis(url)
const bun = new RedisClient(url)
await bun.connect()

const direct: Record<string, { opsPerSec: number[]; cpuUsPerOp: number[] }> = {
  ioredis: { opsPerSec: [], cpuUsPerOp: [] },
  bun: { opsPerSec: [], cpuUsPerOp: [] },
}
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, get] of [
    ['ioredis', () => ioredis.get(key)],
    ['bun', () => bun.get(key)],
  ] as const) {
    const result = await clientLoops(get)
    direct[name]?.opsPerSec.push(result.opsPerSec)
    direct[name]?.cpuUsPerOp.push(result.cpuUsPerOp)
    console.error(
      `direct ${name}: ${result.opsPerSec.toFixed(0)} GET/s, ${result.cpuUsPerOp.toFixed(1)} µs CPU/GET`,
    )
  }
}
ioredis.disconnect()
bun.close()

const servers = []
for (const client of ['bare', 'ioredis', 'bun', 'near']) servers.push(await startChild(client))
const http: Record<string, { rps: number[]; cpuUs: number[]; p99: number[] }> = {}
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const server of servers) {
      await runLoad(
        server.base,
        { method: 'GET', path: '/h' },
        { connections: CONNECTIONS, durationSec: 0.5 },
      )
      const cpuBefore = processCpuSeconds(server.pid) ?? 0
      const load = await runLoad(
        server.base,
        { method: 'GET', path: '/h' },
        { connections: CONNECTIONS, durationSec: SECONDS },
      )
      const cpu = (processCpuSeconds(server.pid) ?? 0) - cpuBefore
      const entry = http[server.client] ?? { rps: [], cpuUs: [], p99: [] }
      http[server.client] = entry
      entry.rps.push(load.rps)
      entry.cpuUs.push((cpu * 1e6) / load.requests)
      entry.p99.push(load.latency.p99)
      console.error(
        `http ${server.client}: ${load.rps.toFixed(0)} req/s, ${((cpu * 1e6) / load.requests).toFixed(1)} µs CPU/req`,
      )
    }
  }
} finally {
  for (const server of servers) await server.stop()
  await setup.del(key)
  setup.disconnect()
}

const bare = median(http.bare?.rps ?? [])
const lines = [
  `## Redis clients for the cache port, ${new Date().toISOString()}`,
  '',
  `Machine: ${machineLine(describeMachine())}. Redis ${url.replace(/\/\/.*@/, '//')}; medians of ${ROUNDS} rotating rounds of ${SECONDS} s.`,
  '',
  '| client alone (32 concurrent GET loops, ~2 KB value) | GET/s | CPU µs per GET (client process) |',
  '|---|--:|--:|',
  ...Object.entries(direct).map(
    ([name, r]) =>
      `| ${name} | ${median(r.opsPerSec).toFixed(0)} | ${median(r.cpuUsPerOp).toFixed(1)} |`,
  ),
  '',
  `| minimal Elysia GET, ${WRK ? 'wrk' : 'autocannon'} ${CONNECTIONS} connections | req/s | ÷ bare | p99 ms | server CPU µs per request |`,
  '|---|--:|--:|--:|--:|',
  ...Object.entries(http).map(
    ([name, r]) =>
      `| ${name} | ${median(r.rps).toFixed(0)} | ${(median(r.rps) / bare).toFixed(2)}× | ${median(r.p99).toFixed(2)} | ${median(r.cpuUs).toFixed(1)} |`,
  ),
  '',
]
const dir = resolve(import.meta.dir, '../results')
mkdirSync(dir, { recursive: true })
const path = join(dir, `${resultName()}-redis-clients.md`)
writeFileSync(path, lines.join('\n'))
console.log(lines.join('\n'))
console.error(`wrote ${path}`)
process.exit(0)
