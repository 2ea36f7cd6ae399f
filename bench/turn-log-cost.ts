// What the Redis turn log costs per appended item, counted rather than timed
// (comparable on a busy machine): Redis commands, Redis CPU time and this
// process's CPU time per item, with many logs appending one item at a time
// as turns do (each waits for its append before the next, so every batch
// holds items of many logs). Runs on a private redis-server started here on a
// free loopback port, so Redis's counters hold nothing but this run.
//
//   bun run bench/turn-log-cost.ts [--logs=500] [--items=60] [--rounds=3]
import Redis from 'ioredis'
import { createRedisTurnLogs } from '../src/state/turn-log/redis-turn-logs.ts'
import { wholeNumberFlag } from './cli-flags.ts'
import { startMeterRedis } from './meter-redis.ts'

const logs = wholeNumberFlag('logs', 500, { min: 1, max: 100_000 })
const itemsPerLog = wholeNumberFlag('items', 60, { min: 1, max: 100_000 })
const rounds = wholeNumberFlag('rounds', 3, { min: 1, max: 100_000 })
const item = 'data: {"v": " word"}\n\n'

const redisServer = await startMeterRedis()
const { port } = redisServer
// As the state store's client is configured (state.ts); retries until the server listens.
const redis = new Redis({
  port,
  host: '127.0.0.1',
  retryStrategy: () => 50,
})
redis.on('error', () => {})

async function counters() {
  const [cpu, stats] = await Promise.all([redis.info('cpu'), redis.info('stats')])
  const field = (info: string, name: string) =>
    Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0)
  return {
    cpuSeconds: field(cpu, 'used_cpu_user') + field(cpu, 'used_cpu_sys'),
    commands: field(stats, 'total_commands_processed'),
  }
}

try {
  await redis.ping()
  // Round 0 warms up (JIT, script cache) and is not reported.
  for (let round = 0; round <= rounds; round++) {
    const store = createRedisTurnLogs({ redis, retentionMs: 600_000 })
    const ids = Array.from({ length: logs }, (_, index) => `cost-${round}-${index}`)
    await Promise.all(
      ids.map((messageId) => store.open({ messageId, conversationId: 'c', userId: 'u' })),
    )
    const before = await counters()
    const cpuBefore = process.cpuUsage()
    const started = performance.now()
    await Promise.all(
      ids.map(async (messageId) => {
        for (let index = 0; index < itemsPerLog; index++) await store.append(messageId, [item], 0)
        await store.finish(messageId, 0)
      }),
    )
    const cpu = process.cpuUsage(cpuBefore)
    const after = await counters()
    await store.close()
    if (round === 0) continue
    const items = logs * itemsPerLog
    console.log(
      JSON.stringify({
        round,
        items,
        // The INFO commands of counters() are left out.
        redisCommandsPerItem: +((after.commands - before.commands - 2) / items).toFixed(3),
        redisCpuUsecPerItem: +(((after.cpuSeconds - before.cpuSeconds) * 1e6) / items).toFixed(2),
        processCpuUsecPerItem: +((cpu.user + cpu.system) / items).toFixed(2),
        wallMs: Math.round(performance.now() - started),
        loadAverage: (await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' '),
      }),
    )
  }
} finally {
  redis.disconnect()
  redisServer.stop()
}
