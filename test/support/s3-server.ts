// A real S3-compatible server for tests: s3rver (a dev dependency, the
// S3 REST API over a folder) run by Bun as a child process on a free loopback
// port, with one bucket. Not a mock: the S3 adapter talks HTTP to it with
// SigV4 like to any store. s3rver checks a presigned URL's expiry but not
// its V4 signature (it never computes one), so tests of tampered URLs are
// the folder store's only.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const S3RVER = join(import.meta.dir, '..', '..', 'node_modules', 's3rver', 'bin', 's3rver.js')
const READY_WITHIN_MS = 30_000

export interface S3Server {
  endpoint: string
  bucket: string
  /** s3rver's fixed credentials. */
  accessKeyId: string
  secretAccessKey: string
  stop(): Promise<void>
}

export async function startS3Server(bucket = 'files'): Promise<S3Server> {
  const dir = mkdtempSync(join(tmpdir(), 'conduit-s3-'))
  const proc = Bun.spawn(
    [process.execPath, S3RVER, '-d', dir, '-a', '127.0.0.1', '-p', '0', '-s'].concat([
      '--configure-bucket',
      bucket,
    ]),
    { stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' },
  )
  const stop = async () => {
    proc.kill()
    await proc.exited
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    const port = await listeningPort(proc.stdout, READY_WITHIN_MS)
    return {
      endpoint: `http://127.0.0.1:${port}`,
      bucket,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      stop,
    }
  } catch (error) {
    await stop()
    throw error
  }
}

/** The port of s3rver's "S3rver listening on 127.0.0.1:<port>" line. */
async function listeningPort(stdout: ReadableStream<Uint8Array>, ms: number): Promise<number> {
  const decoder = new TextDecoder()
  let text = ''
  const reader = stdout.getReader()
  const timer = setTimeout(() => reader.cancel(), ms)
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) throw new Error(`s3rver did not start: ${text}`)
      text += decoder.decode(value, { stream: true })
      const match = /listening on [\d.]+:(\d+)/.exec(text)
      if (match) {
        // Keep reading so the child never blocks on a full pipe.
        void (async () => {
          while (!(await reader.read().catch(() => ({ done: true }))).done) {}
        })()
        return Number(match[1])
      }
    }
  } finally {
    clearTimeout(timer)
  }
}
