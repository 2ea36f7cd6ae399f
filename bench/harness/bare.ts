// Starts the bare reference server (bare-server.ts) as a child process, like
// the service, so both pay the same process and HTTP costs.
import { join } from 'node:path'
import { terminate, track } from './children.ts'

export interface BareServer {
  url: string
  pid: number
  /** The path answering a fixed JSON document of exactly `bytes` bytes. */
  pathFor(bytes: number): string
  stop(): Promise<void>
}

export async function startBare(): Promise<BareServer> {
  const child = track(
    Bun.spawn([process.execPath, 'run', join(import.meta.dir, 'bare-server.ts')], {
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'inherit',
    }),
  )
  const { value } = await child.stdout.getReader().read()
  const port = Number(new TextDecoder().decode(value).trim())
  if (!Number.isInteger(port) || port <= 0) {
    await terminate(child, 2_000)
    throw new Error('the bare reference server did not start')
  }
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    pathFor: (bytes) => `/bytes/${bytes}`,
    stop: () => terminate(child, 5_000),
  }
}
