// Keeps a second process off an embedded database directory: PGlite has no lock
// of its own, and two writers silently lose data. The lock is an OS lock
// (flock) on `conduit.lock`, held through an open file for as long as the
// process lives: the kernel releases it when the holder exits or dies, so a
// crash never leaves a stale lock, and a restart under the same pid (a
// container's PID 1) starts normally. The file's text names the holder, for
// the refusal message only. flock is reached through bun:ffi, as neither Node's
// nor Bun's fs exposes it.
import { dlopen, FFIType } from 'bun:ffi'
import {
  closeSync,
  constants,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  writeSync,
} from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'

export class DataDirLockedError extends Error {}

const LOCK_EX = 2
const LOCK_NB = 4

type Flock = (fd: number, operation: number) => number

/** libc's flock(2), from the first C library found (glibc, musl, macOS). */
function loadFlock(): Flock {
  const names = [
    'libc.so.6',
    `libc.musl-${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}.so.1`,
    'libc.dylib',
    '/usr/lib/libSystem.B.dylib',
  ]
  for (const name of names) {
    try {
      const libc = dlopen(name, {
        flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
      })
      return (fd, operation) => libc.symbols.flock(fd, operation)
    } catch {
      // Not this platform's C library; try the next.
    }
  }
  throw new Error('cannot lock DATA_DIR: no C library with flock() was found')
}

let flock: Flock | undefined

function holderOf(path: string): string {
  try {
    const owner = JSON.parse(readFileSync(path, 'utf8')) as { pid?: unknown; host?: unknown }
    if (typeof owner.pid === 'number' && typeof owner.host === 'string')
      return `process ${owner.pid} on ${owner.host}`
  } catch {
    // Written by a holder that has not finished writing it: say so plainly.
  }
  return 'another process'
}

/** Takes the lock on dir or throws DataDirLockedError; returns the release function. */
export function lockDataDir(dir: string): () => void {
  flock ??= loadFlock()
  mkdirSync(dir, { recursive: true })
  const path = join(dir, 'conduit.lock')
  // The file is never deleted: a process that opened it just before a deletion
  // would lock a file nobody else sees, and two holders would both succeed.
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644)
  if (flock(fd, LOCK_EX | LOCK_NB) !== 0) {
    closeSync(fd)
    throw new DataDirLockedError(
      `DATA_DIR ${dir} is in use by ${holderOf(path)}; ` +
        'stop it or point DATA_DIR elsewhere (two processes would corrupt the database).',
    )
  }
  ftruncateSync(fd, 0)
  writeSync(fd, JSON.stringify({ pid: process.pid, host: hostname() }), 0)
  let released = false
  return () => {
    if (released) return
    released = true
    ftruncateSync(fd, 0)
    closeSync(fd)
  }
}
