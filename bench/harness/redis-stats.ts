// Redis's own counters around a scenario: calls and time per command (INFO
// commandstats), commands, read events and bytes in total, and the server's
// CPU time. They show what the turn logs cost Redis per streamed item, and
// whether writes go out batched: EVALSHA calls are the log batcher's script
// calls (one per batch, per slot on a Cluster, unless a batch holds more than
// 1,000 items), and read events (`total_reads_processed`: each time Redis
// read a client's socket) count round trips - a pipeline of commands written
// together arrives in one read.
// Counters are server-wide: other users of the same Redis show in them too.
import Redis from 'ioredis'

export interface CommandDelta {
  command: string
  calls: number
  usec: number
}

export interface RedisDelta {
  commands: CommandDelta[]
  totalCommands: number
  /** Socket reads Redis served: about one a round trip of a client. */
  readEvents: number
  netInputBytes: number
  netOutputBytes: number
  cpuSeconds: number
}

type Counters = Map<string, { calls: number; usec: number }>

interface Snapshot {
  commands: Counters
  totalCommands: number
  readEvents: number
  netInputBytes: number
  netOutputBytes: number
  cpuSeconds: number
}

function field(info: string, name: string): number {
  const match = new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)
  return match?.[1] === undefined ? 0 : Number(match[1])
}

async function snapshot(redis: Redis): Promise<Snapshot> {
  // One write, so one read event of the meter's own in each snapshot.
  const replies =
    (await redis.pipeline().info('commandstats').info('stats').info('cpu').exec()) ?? []
  const [commandInfo, stats, cpu] = replies.map(([error, reply]) => {
    if (error) throw error
    return String(reply)
  }) as [string, string, string]
  const commands: Counters = new Map()
  for (const match of commandInfo.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm))
    commands.set(match[1] ?? '', { calls: Number(match[2]), usec: Number(match[3]) })
  return {
    commands,
    totalCommands: field(stats, 'total_commands_processed'),
    readEvents: field(stats, 'total_reads_processed'),
    netInputBytes: field(stats, 'total_net_input_bytes'),
    netOutputBytes: field(stats, 'total_net_output_bytes'),
    cpuSeconds: field(cpu, 'used_cpu_user') + field(cpu, 'used_cpu_sys'),
  }
}

export interface RedisMeter {
  stop(): Promise<RedisDelta | undefined>
}

/** Starts counting on the Redis server at `url` (loopback, checked by the caller). */
export async function meterRedis(url: string): Promise<RedisMeter> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 2_000 })
  redis.on('error', () => {})
  const before = await snapshot(redis).catch(() => undefined)
  let result: Promise<RedisDelta | undefined> | undefined
  const measure = async (): Promise<RedisDelta | undefined> => {
    try {
      const after = await snapshot(redis)
      if (!before) return undefined
      const commands: CommandDelta[] = []
      for (const [command, end] of after.commands) {
        const start = before.commands.get(command) ?? { calls: 0, usec: 0 }
        const calls = end.calls - start.calls
        if (calls > 0) commands.push({ command, calls, usec: end.usec - start.usec })
      }
      commands.sort((a, b) => b.calls - a.calls)
      return {
        commands,
        // The INFO commands of this meter are left out.
        totalCommands: after.totalCommands - before.totalCommands - 3,
        // Less the read of the second snapshot's own commands.
        readEvents: Math.max(0, after.readEvents - before.readEvents - 1),
        netInputBytes: after.netInputBytes - before.netInputBytes,
        netOutputBytes: after.netOutputBytes - before.netOutputBytes,
        cpuSeconds: after.cpuSeconds - before.cpuSeconds,
      }
    } catch {
      return undefined
    } finally {
      redis.disconnect()
    }
  }
  return {
    /** The counters' change since the start; later calls return the first answer. */
    stop() {
      result ??= measure()
      return result
    },
  }
}
