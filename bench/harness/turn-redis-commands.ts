// The Redis commands one send costs, captured with MONITOR while the
// service's own code runs it (turn-statements.ts), so that the stack
// reference can replay them beside the turn's SQL (issue #30: a reference of
// the whole stack, not of Postgres alone). Only the capture's commands are
// kept: those naming a key under its prefix (its turn state and its cache),
// sent by a client, not by a script (a script's inner calls are part of the
// EVALSHA that runs it), and not a blocking read or a subscription (a
// follower waiting for the next item is not work; replayed, it would block).
import Redis from 'ioredis'

/** One command as a client sent it: the server (host:port) and database it ran in, and its words. */
export interface CapturedCommand {
  server: string
  db: number
  args: string[]
}

/** Waiting for items or messages, or asking about the connection: not a turn's work, and not replayable. */
const LEFT_OUT = new Set([
  'xread',
  'xreadgroup',
  'blpop',
  'brpop',
  'bzpopmin',
  'subscribe',
  'ssubscribe',
  'psubscribe',
  'unsubscribe',
  'sunsubscribe',
  'punsubscribe',
  'ping',
  'echo',
  'client',
  'hello',
  'select',
  'info',
  'monitor',
  'script',
])

/** Whether a command MONITOR showed is one of the capture's own, to replay. */
export function isCapturedCommand(
  args: readonly string[],
  source: string,
  prefix: string,
): boolean {
  const name = args[0]?.toLowerCase()
  if (!name || LEFT_OUT.has(name)) return false
  if (source.includes('lua')) return false
  return args.some((arg) => arg.includes(prefix))
}

export interface CommandMonitor {
  /** Every command captured since the start; resolves once MONITOR has shown everything sent before the call. */
  stop(): Promise<CapturedCommand[]>
}

/** Starts MONITOR on the server of `redisUrl` (every database of it), keeping the commands under `prefix`. */
export async function monitorCommands(redisUrl: string, prefix: string): Promise<CommandMonitor> {
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
  await client.connect()
  const monitor = await client.monitor()
  const server = new URL(redisUrl).host
  const marker = `${prefix}end-of-capture`
  const commands: CapturedCommand[] = []
  let markerSeen: (() => void) | undefined
  monitor.on('monitor', (_time: string, args: string[], source: string, database: string) => {
    if (args[0]?.toLowerCase() === 'echo' && args[1] === marker) markerSeen?.()
    else if (isCapturedCommand(args, source, prefix))
      commands.push({ server, db: Number(database), args: [...args] })
  })
  return {
    async stop() {
      // MONITOR shows commands in the order the server ran them: once it shows
      // this ECHO, it has shown every command sent before it.
      const seen = new Promise<void>((resolve) => {
        markerSeen = resolve
      })
      await client.echo(marker)
      await seen
      monitor.disconnect()
      client.disconnect()
      return commands
    },
  }
}
