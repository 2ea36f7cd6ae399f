// The DATA_DIR lock that keeps a second process off an embedded database: held
// while locked (also against a second lock in the same process), refused with
// the holder's pid while a live process holds it, released on release() and
// by the kernel when the holder dies, and never fooled by what the lock file
// says - a file naming this very pid (a container restarted as PID 1 after a
// crash) or a dead process, or garbage, is no lock.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { DataDirLockedError, lockDataDir } from '../../src/storage/data-dir-lock.ts'

const LOCK_FILE = 'conduit.lock'
const LOCK_MODULE = join(import.meta.dir, '..', '..', 'src', 'storage', 'data-dir-lock.ts')
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

/** A separate process that takes the lock on dir and holds it until killed. */
async function holderProcess(dir: string) {
  const child = Bun.spawn(
    [
      process.execPath,
      '-e',
      `const { lockDataDir } = await import(${JSON.stringify(LOCK_MODULE)});
       lockDataDir(${JSON.stringify(dir)}); console.log('locked'); setInterval(() => {}, 60_000)`,
    ],
    { stdout: 'pipe', stderr: 'inherit' },
  )
  const reader = child.stdout.getReader()
  const { value } = await reader.read()
  expect(new TextDecoder().decode(value)).toContain('locked')
  return child
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
    expect(owner(dir)).toEqual({ pid: process.pid, host: hostname() })
    release()
  })

  test('a second lock on a held directory, even in the same process, is refused naming the pid', () => {
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

  test('release() lets the directory be locked again', () => {
    const dir = tempDir()
    const release = lockDataDir(dir)
    release()
    release()
    const again = lockDataDir(dir)
    expect(owner(dir)).toEqual({ pid: process.pid, host: hostname() })
    again()
  })

  test('a live process holding the lock is respected; once it dies the lock is free at once', async () => {
    const dir = tempDir()
    const child = await holderProcess(dir)
    try {
      expect(lockError(dir).message).toContain(`process ${child.pid} on ${hostname()}`)
    } finally {
      child.kill('SIGKILL')
      await child.exited
    }
    // Killed without any chance to clean up: the kernel released its lock.
    expect(owner(dir)).toEqual({ pid: child.pid, host: hostname() })
    const release = lockDataDir(dir)
    expect(owner(dir)).toEqual({ pid: process.pid, host: hostname() })
    release()
  })

  test('a lock file naming this very pid, left by a crash before a restart as the same pid, is no lock', () => {
    const dir = tempDir()
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: process.pid, host: hostname() }))
    const release = lockDataDir(dir)
    expect(owner(dir)).toEqual({ pid: process.pid, host: hostname() })
    release()
  })

  test('a lock file naming a live process that holds no lock is no lock', () => {
    const dir = tempDir()
    // The parent of this test process is alive, and holds nothing here.
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: process.ppid, host: hostname() }))
    const release = lockDataDir(dir)
    expect(owner(dir)).toEqual({ pid: process.pid, host: hostname() })
    release()
  })

  test('a garbage lock file is no lock', () => {
    for (const garbage of ['', 'not json at all', '{"pid":"12"}', '[]', 'null']) {
      const dir = tempDir()
      writeFileSync(join(dir, LOCK_FILE), garbage)
      const release = lockDataDir(dir)
      expect(owner(dir)).toEqual({ pid: process.pid, host: hostname() })
      release()
    }
  })
})
