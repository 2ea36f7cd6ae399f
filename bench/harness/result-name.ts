// The name every run's result files share: the UTC date and time of the run
// and the commit it measured, so runs are kept side by side, never overwritten.
import { spawnSync } from 'node:child_process'

/** The short commit hash of the working tree, `-dirty` when it has changes; `unknown` outside git. */
export function commitLabel(): string {
  const run = (args: string[]) => spawnSync('git', args, { cwd: import.meta.dir, encoding: 'utf8' })
  const head = run(['rev-parse', '--short=10', 'HEAD'])
  if (head.status !== 0) return 'unknown'
  const dirty = run(['status', '--porcelain', '--untracked-files=no']).stdout.trim() !== ''
  return `${head.stdout.trim()}${dirty ? '-dirty' : ''}`
}

/** `2026-11-22T0612Z-1a2b3c4d5e`: the date, the time to the minute, the commit. */
export function resultName(date = new Date(), commit = commitLabel()): string {
  const stamp = date.toISOString().slice(0, 16).replace(':', '')
  return `${stamp}Z-${commit}`
}
