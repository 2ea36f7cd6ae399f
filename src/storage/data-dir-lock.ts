// Keeps a second process off an embedded database directory: PGlite has no lock
// of its own, and two writers silently lose data. The lock is a file holding
// the owner's pid and host; a lock left by a dead process on this host is taken over.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'

export class DataDirLockedError extends Error {}

interface LockOwner {
  pid: number
  host: string
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function readOwner(path: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(readFileSync(path, 'utf8')) as Partial<LockOwner>
    return typeof owner.pid === 'number' && typeof owner.host === 'string'
      ? { pid: owner.pid, host: owner.host }
      : undefined
  } catch {
    return undefined
  }
}

/** Takes the lock on dir or throws DataDirLockedError; returns the release function. */
export function lockDataDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true })
  const path = join(dir, 'conduit.lock')
  const me: LockOwner = { pid: process.pid, host: hostname() }
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, JSON.stringify(me), { flag: 'wx' })
      return () => rmSync(path, { force: true })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    const owner = readOwner(path)
    const stale = owner === undefined || (owner.host === me.host && !isRunning(owner.pid))
    if (!stale)
      throw new DataDirLockedError(
        `DATA_DIR ${dir} is in use by process ${owner.pid} on ${owner.host}; ` +
          'stop it or point DATA_DIR elsewhere (two processes would corrupt the database).',
      )
    rmSync(path, { force: true })
  }
  throw new DataDirLockedError(`DATA_DIR ${dir} could not be locked; another process races for it.`)
}
