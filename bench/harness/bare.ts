// Starts the reference servers as child processes, like the service, so both
// pay the same process and HTTP costs: the bare route of the request scenarios
// (bare-server.ts), the bare SSE server of the many-streams scenario
// (bare-sse-server.ts) and, through startReference, the stack reference of the
// sends (bare-sends.ts). Each prints its port when it listens.
import { join } from 'node:path'
import { terminate, track } from './children.ts'
import { withFileLimit } from './server.ts'

export interface ReferenceServer {
  url: string
  pid: number
  stop(): Promise<void>
}

export interface BareServer extends ReferenceServer {
  /** The path answering a fixed JSON document of exactly `bytes` bytes. */
  pathFor(bytes: number): string
}

/** Runs `script` (in this directory) with `args` and `env`, with room for thousands of sockets; waits for its port. */
export async function startReference(
  script: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<ReferenceServer> {
  const child = track(
    Bun.spawn(withFileLimit([process.execPath, 'run', join(import.meta.dir, script), ...args]), {
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
  return { url: `http://127.0.0.1:${port}`, pid: child.pid, stop: () => terminate(child, 5_000) }
}

export async function startBare(): Promise<BareServer> {
  const server = await startReference('bare-server.ts')
  return { ...server, pathFor: (bytes) => `/bytes/${bytes}` }
}

/** The bare SSE server, sending one append item every `chunkDelayMs`. */
export function startBareSse(chunkDelayMs: number): Promise<ReferenceServer> {
  return startReference('bare-sse-server.ts', [String(chunkDelayMs)])
}
