// A description of the machine and tools a run measured on: figures mean little
// without it, and a noisy neighbour shows in the load average.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus, loadavg, release, totalmem, type } from 'node:os'
import { WRK } from './load.ts'

export interface Machine {
  cpu: string
  cores: number
  memoryGiB: number
  os: string
  bun: string
  autocannon: string
  /** The saturated runs' load generator: `wrk <version>`, or `autocannon` when wrk is missing. */
  generator: string
  /** 1-minute load average when the run started. */
  loadAverage: number
}

function autocannonVersion(): string {
  try {
    const path = Bun.resolveSync('autocannon/package.json', import.meta.dir)
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'))
    if (typeof parsed === 'object' && parsed !== null && 'version' in parsed)
      return String(parsed.version)
  } catch {}
  return 'unknown'
}

/** `wrk 4.1.0` as `wrk --version` names itself (it prints its usage and exits 1). */
function generatorName(): string {
  if (!WRK) return `autocannon ${autocannonVersion()} (in the harness's process)`
  const out = spawnSync(WRK, ['--version'], { encoding: 'utf8' })
  const version = /wrk\s+(\S+)/.exec(`${out.stdout}${out.stderr}`)?.[1]
  return `wrk ${version ?? 'unknown'} (1 thread)`
}

export function describeMachine(): Machine {
  const list = cpus()
  return {
    cpu: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${type()} ${release()}`,
    bun: Bun.version,
    autocannon: autocannonVersion(),
    generator: generatorName(),
    loadAverage: loadavg()[0] ?? 0,
  }
}

export function machineLine(machine: Machine): string {
  return (
    `${machine.cores} × ${machine.cpu}, ${machine.memoryGiB} GiB RAM, ${machine.os}, ` +
    `Bun ${machine.bun}, load generator ${machine.generator}, load average ${machine.loadAverage.toFixed(2)} at start`
  )
}
