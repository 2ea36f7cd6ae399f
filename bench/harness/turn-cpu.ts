// Where a send's CPU goes, per turn, by process: the server, Postgres (every
// backend), Redis (the whole server) and the clients, metered from /proc over
// one round of the send scenario (cpu.ts); pgbench's own rounds give Postgres
// and the pgbench client. From these, the bound a server costing nothing would
// leave: the machine's cores over what the rest of a turn costs. When that
// bound is below a target share of pgbench, no server can reach it on this
// machine - a measured elimination, not a guess.
import { meterCpu, processCpuSeconds } from './cpu.ts'

/** CPU µs per turn of each part; undefined where /proc could not tell. */
export interface TurnCpu {
  server?: number
  postgres?: number
  redis?: number
  clients?: number
}

/** µs per turn of `seconds` over `turns`; undefined without turns. */
const perTurn = (seconds: number | undefined, turns: number) =>
  seconds === undefined || turns === 0 ? undefined : (seconds * 1e6) / turns

/**
 * Starts metering a round of sends to the server `serverPid`, whose clients
 * run in this process; stop(turns) gives each part's CPU µs per turn.
 */
export function meterTurnCpu(serverPid: number): { stop(turns: number): TurnCpu } {
  const meter = meterCpu(
    () => ({ server: processCpuSeconds(serverPid), clients: processCpuSeconds(process.pid) }),
    { postgres: 'postgres', redis: 'redis-server' },
  )
  return {
    stop(turns) {
      const uses = meter.stop().uses
      const seconds = (name: string) => uses.find((use) => use.name === name)?.seconds
      return {
        server: perTurn(seconds('server'), turns),
        postgres: perTurn(seconds('postgres'), turns),
        redis: perTurn(seconds('redis'), turns),
        clients: perTurn(seconds('clients'), turns),
      }
    },
  }
}

/** Starts metering Postgres over a pgbench run; stop(turns, clientCpuUs) adds pgbench's own CPU. */
export function meterPgbenchCpu(): {
  stop(turns: number, clientCpuUs: number | undefined): TurnCpu
} {
  const meter = meterCpu(() => ({}), { postgres: 'postgres' })
  return {
    stop(turns, clientCpuUs) {
      const postgres = meter.stop().uses.find((use) => use.name === 'postgres')?.seconds
      return {
        postgres: perTurn(postgres, turns),
        clients: clientCpuUs === undefined || turns === 0 ? undefined : clientCpuUs / turns,
      }
    },
  }
}

/**
 * Turns a second `cores` could run if each turn cost the CPU of the parts in
 * `cpu` (pass `server: 0` for a server that costs nothing); undefined
 * without Postgres and client figures.
 */
export function machineBound(cpu: TurnCpu, cores: number): number | undefined {
  if (cpu.postgres === undefined || cpu.clients === undefined) return undefined
  const total = (cpu.server ?? 0) + cpu.postgres + (cpu.redis ?? 0) + cpu.clients
  return total > 0 ? (cores * 1e6) / total : undefined
}
