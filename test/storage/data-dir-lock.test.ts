// The DATA_DIR lock that keeps a second process off an embedded database: held
// while locked, refused with the owner's pid, released, and taken over when the
// lock file is stale (dead pid on this host) or unreadable.
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { DataDirLockedError, lockDataDir } from '../../src/storage/data-dir-lock.ts'

const LOCK_FILE = 'conduit.lock'
const dirs: string[] = []

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'conduit-lock-'))
  dirs.push(dir)
  return dir
}

function lockError(dir: string): DataDirLockedError {
  try {
    lockDataDir(dir)
  } catch (error) {
    if (error instanceof DataDirLockedError) return error
    throw error
  }
  throw new Error('expected the lock to be refused, but it was granted')
}

function owner(dir: string): unknown {
  return JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'))
}

/** The pid of a process that has already exited. */
async function deadPid(): Promise<number> {
  const child = Bun.spawn([process.execPath, '--version'], { stdout: 'ignore', stderr: 'ignore' })
  await child.exited
  return child.pid
}

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe('lockDataDir', () => {
  test('writes a lock file naming this process and host', () => {
    const dir = tempDir()
    const release = lockDataDir(dir)
    expect(owner(dir)).toEqual({ pid: process.pid, host: hostname() })
    release()
  })

  test('creates a data directory that does not exist yet', () => {
    const dir = join(tempDir(), 'nested', 'data')
    const release = lockDataDir(dir)
    expect(existsSync(join(dir, LOCK_FILE))).toBe(true)
    release()
  })

  test('a second lock on a held directory throws DataDirLockedError naming the pid', () => {
    const dir = tempDir()
    const release = lockDataDir(dir)
    const error = lockError(dir)
    expect(error).toBeInstanceOf(Error)
    expect(error.message).toContain(String(process.pid))
    expect(error.message).toContain('DATA_DIR')
    expect(error.message).toContain('in use')
    // The refused attempt leaves the holder's lock in place.
    expect(owner(dir)).toEqual({ pid: process.pid, host: hostname() })
    release()
  })

  test('release() removes the lock so the directory can be locked again', () => {
    const dir = tempDir()
    const release = lockDataDir(dir)
    release()
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false)
    const again = lockDataDir(dir)
    expect(owner(dir)).toEqual({ pid: process.pid, host: hostname() })
    again()
  })

  test('a lock left by a dead process on this host is taken over', async () => {
    const dir = tempDir()
    const pid = await deadPid()
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid, host: hostname() }))
    const release = lockDataDir(dir)
    expect(owner(dir)).toEqual({ pid: process.pid, host: hostname() })
    release()
  })

  test('a lock held by a live process on this host is respected', () => {
    const dir = tempDir()
    const child = Bun.spawn([process.execPath, '-e', 'setTimeout(() => {}, 60_000)'], {
      stdout: 'ignore',
      stderr: 'ignore',
    })
    try {
      writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: child.pid, host: hostname() }))
      expect(lockError(dir).message).toContain(String(child.pid))
    } finally {
      child.kill('SIGKILL')
    }
  })

  test('a lock from another host is respected, since its pid cannot be checked here', async () => {
    const dir = tempDir()
    const pid = await deadPid()
    const host = `${hostname()}-elsewhere`
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid, host }))
    const error = lockError(dir)
    expect(error.message).toContain(String(pid))
    expect(error.message).toContain(host)
  })

  test('a garbage lock file is taken over', () => {
    for (const garbage of ['', 'not json at all', '{"pid":"12"}', '[]', 'null']) {
      const dir = tempDir()
      writeFileSync(join(dir, LOCK_FILE), garbage)
      const release = lockDataDir(dir)
      expect(owner(dir)).toEqual({ pid: process.pid, host: hostname() })
      release()
    }
  })
})
