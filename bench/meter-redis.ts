// A private redis-server for the cost meters (turn-cost.ts, turn-log-cost.ts):
// on a free loopback port, with no persistence, so its counters (INFO stats,
// commandstats, cpu) hold nothing but the meter's run. It is killed on stop()
// and when the process exits, also when setting up fails before stop().
import { spawn } from 'node:child_process'
import { freePort } from './harness/server.ts'

export interface MeterRedis {
  port: number
  stop(): void
}

export async function startMeterRedis(): Promise<MeterRedis> {
  const port = await freePort()
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  )
  process.on('exit', () => server.kill())
  return { port, stop: () => server.kill() }
}
