// Starts the bare reference server (bare-server.ts) as a child process, like
// the service, so both pay the same process and HTTP costs. startReference
// starts any such reference: a script that listens on a free loopback port
// and prints it (bare-sends.ts starts the sends' one with it).
import { join } from 'node:path'
import { terminate, track } from './children.ts'

export interface ReferenceProcess {
  url: string
  pid: number
  stop(): Promise<void>
}

export interface BareServer extends ReferenceProcess {
  /** The path answering a fixed JSON document of exactly `bytes` bytes. */
  pathFor(bytes: number): string
}

/** Runs `script` (in this directory) with `args` and `env` until it prints its port. */
export async function startReference(
  script: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<ReferenceProcess> {
  const child = track(
    Bun.spawn([process.execPath, 'run', join(import.meta.dir, script), ...args], {
      env: { ...process.env, ...env },
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'inherit',
    }),
  )
  const { value } = await child.stdout.getReader().read()
  const port = Number(new TextDecoder().decode(value).trim())
  if (!Number.isInteger(port) || port <= 0) {
    await terminate(child, 2_000)
    throw new Error(`the reference server ${script} did not start`)
  }
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    stop: () => terminate(child, 5_000),
  }
}

export async function startBare(): Promise<BareServer> {
  const reference = await startReference('bare-server.ts')
  return { ...reference, pathFor: (bytes) => `/bytes/${bytes}` }
}
