// `bun run bench/embedded/startup.ts [checkout …]`: the embedded defaults'
// two costs of issue 9, for this checkout and any other given (e.g. an
// export of main), in rotating rounds: the first start on a fresh DATA_DIR
// (spawn to the first 200 from GET /health), and the server's CPU per
// GET /health under load (wrk, or autocannon without it; 10 connections, 3 s).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { terminate, track } from '../harness/children.ts'
import { processCpuSeconds } from '../harness/cpu.ts'
import { runLoad } from '../harness/load.ts'
import { describeMachine, machineLine } from '../harness/machine.ts'
import { resultName } from '../harness/result-name.ts'
import { freePort } from '../harness/server.ts'

const ROUNDS = 3
const checkouts = [
  resolve(import.meta.dir, '../..'),
  ...Bun.argv.slice(2).map((path) => resolve(path)),
]

async function once(root: string) {
  const dataDir = mkdtempSync(join(tmpdir(), 'conduit-start-'))
  const port = await freePort()
  const started = performance.now()
  const child = track(
    Bun.spawn([process.execPath, 'run', 'src/index.ts'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
      },
      stdout: 'ignore',
      stderr: 'ignore',
    }),
  )
  const url = `http://127.0.0.1:${port}`
  try {
    let startMs = Number.NaN
    for (let attempt = 0; attempt < 600; attempt++) {
      const ok = await fetch(`${url}/health`).then(
        (response) => response.ok,
        () => false,
      )
      if (ok) {
        startMs = performance.now() - started
        break
      }
      await Bun.sleep(20)
    }
    await runLoad(url, { method: 'GET', path: '/health' }, { connections: 10, durationSec: 1 })
    const before = processCpuSeconds(child.pid) ?? 0
    const load = await runLoad(
      url,
      { method: 'GET', path: '/health' },
      { connections: 10, durationSec: 3 },
    )
    const cpuUs = (((processCpuSeconds(child.pid) ?? 0) - before) * 1e6) / load.requests
    return { startMs, healthRps: load.rps, healthCpuUs: cpuUs }
  } finally {
    await terminate(child, 10_000)
    rmSync(dataDir, { recursive: true, force: true })
  }
}

const rows: Record<string, { startMs: number[]; healthRps: number[]; healthCpuUs: number[] }> = {}
for (let round = 0; round < ROUNDS; round++)
  for (const root of checkouts) {
    const result = await once(root)
    const row = rows[root] ?? { startMs: [], healthRps: [], healthCpuUs: [] }
    rows[root] = row
    row.startMs.push(result.startMs)
    row.healthRps.push(result.healthRps)
    row.healthCpuUs.push(result.healthCpuUs)
    console.error(
      `${root}: start ${result.startMs.toFixed(0)} ms, /health ${result.healthRps.toFixed(0)} req/s, ${result.healthCpuUs.toFixed(0)} µs CPU each`,
    )
  }
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
const lines = [
  `## Embedded: first start and GET /health, ${new Date().toISOString()}`,
  '',
  `Machine: ${machineLine(describeMachine())}. Medians of ${ROUNDS} rotating rounds; ` +
    'the first round of a checkout may build its template.',
  '',
  '| checkout | first start on a fresh DATA_DIR, ms | GET /health req/s | server CPU per /health, µs |',
  '|---|--:|--:|--:|',
  ...Object.entries(rows).map(
    ([root, row]) =>
      `| ${root} | ${median(row.startMs).toFixed(0)} | ${median(row.healthRps).toFixed(0)} | ${median(row.healthCpuUs).toFixed(0)} |`,
  ),
  '',
]
const dir = resolve(import.meta.dir, '../results')
mkdirSync(dir, { recursive: true })
const path = join(dir, `${resultName()}-embedded-startup.md`)
writeFileSync(path, lines.join('\n'))
console.log(lines.join('\n'))
console.error(`wrote ${path}`)
process.exit(0)
