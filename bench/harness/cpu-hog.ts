// A CPU hog for `bun run bench --scale --cpu-hog`: one child process spinning
// on this machine beside the deployment, as another tenant or build would, so
// the scale scenarios show what a busy machine does to the service (issue
// #29: on a busy 2-core machine a saturated event loop took a healthy Redis
// for dead). It spins for at most `seconds` on its own, is tracked like every
// child of the harness (children.ts: killed if the harness exits), and stop()
// kills it.
import type { Subprocess } from 'bun'
import { terminate, track } from './children.ts'

export interface CpuHog {
  readonly pid: number
  stop(): Promise<void>
}

/** Starts one spinning process, which exits by itself after `seconds` at the latest. */
export function startCpuHog(seconds: number): CpuHog {
  const spin = `const end = Date.now() + ${Math.ceil(seconds * 1000)}; let x = 0; while (Date.now() < end) x = (x + 1) % 1e9`
  const child: Subprocess = track(
    Bun.spawn([process.execPath, '-e', spin], {
      stdin: 'ignore',
      stdout: 'ignore',
      stderr: 'ignore',
    }),
  )
  return { pid: child.pid, stop: () => terminate(child, 1_000) }
}
