// A description of the machine and tools a run measured on: figures mean little
// without it, and a noisy neighbour shows in the load average.
import { readFileSync } from 'node:fs'
import { cpus, loadavg, release, totalmem, type } from 'node:os'

export interface Machine {
  cpu: string
  cores: number
  memoryGiB: number
  os: string
  bun: string
  autocannon: string
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

export function describeMachine(): Machine {
  const list = cpus()
  return {
    cpu: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${type()} ${release()}`,
    bun: Bun.version,
    autocannon: autocannonVersion(),
    loadAverage: loadavg()[0] ?? 0,
  }
}

export function machineLine(machine: Machine): string {
  return (
    `${machine.cores} × ${machine.cpu}, ${machine.memoryGiB} GiB RAM, ${machine.os}, ` +
    `Bun ${machine.bun}, autocannon ${machine.autocannon}, load average ${machine.loadAverage.toFixed(2)} at start`
  )
}
