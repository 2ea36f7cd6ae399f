// A test server script run as a real process on loopback: it prints
// `listening <port>` once it listens on a port of its own choosing (or the
// one it was given). The process is killed if it does not say so in time;
// stop() kills it by its own pid.
import type { Subprocess } from 'bun'

export interface ListeningProcess {
  proc: Subprocess<'ignore', 'pipe', 'inherit'>
  port: number
  stop(): Promise<void>
}

/** Starts `script` with `env` (PATH added) and resolves once it says it listens. */
export async function spawnListening(
  script: string,
  env: Record<string, string>,
  what: string,
  withinMs = 30_000,
): Promise<ListeningProcess> {
  const proc = Bun.spawn([process.execPath, 'run', script], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const reader = proc.stdout.getReader()
  const decoder = new TextDecoder()
  let text = ''
  let port: string | undefined
  const deadline = setTimeout(() => proc.kill('SIGKILL'), withinMs)
  try {
    while (port === undefined) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`${what} exited: ${text}`)
      text += decoder.decode(value, { stream: true })
      port = /listening (\d+)/.exec(text)?.[1]
    }
  } finally {
    clearTimeout(deadline)
  }
  reader.releaseLock()
  return {
    proc,
    port: Number(port),
    async stop() {
      proc.kill('SIGKILL')
      await proc.exited
    },
  }
}
