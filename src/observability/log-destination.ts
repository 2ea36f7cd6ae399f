// Where log lines go: stdout, written in batches. A line waits at most
// FLUSH_MS (or until BATCH_BYTES are pending) and then goes out with every
// other line pending, in one write(2). Under load that is one write for
// hundreds of access lines: written once per event-loop turn instead, the
// writes to the pipe alone were 14 % of a cache hit's CPU over HTTP (Bun's
// CPU profiler, autocannon at 10 connections), as the loop turns over every
// few requests. Whoever reads the output sees a line within FLUSH_MS.
//
// Not pino's SonicBoom: its asynchronous mode, under Bun, holds a write to a
// pipe until the process exits, and its flush calls fsync on every flush. A
// full pipe (EAGAIN) is retried shortly without blocking the loop; past
// MAX_PENDING_BYTES new lines are dropped and counted rather than held; a
// closed reader (EPIPE) ends logging. What is pending is written on exit.
import { writeSync } from 'node:fs'
import type { DestinationStream } from 'pino'

/** Characters (bytes, for the ASCII of JSON lines) held for a stalled reader before new lines are dropped. */
export const MAX_PENDING_BYTES = 8 * 2 ** 20
/** The longest a line waits before it is written. */
export const FLUSH_MS = 20
/** Pending characters that are written at once, without waiting for FLUSH_MS. */
export const BATCH_BYTES = 64 * 2 ** 10
/** Wait before writing again to a full pipe. */
const RETRY_MS = 10

export interface BatchedDestination extends DestinationStream {
  /** Writes everything pending now (blocking on a full pipe only briefly). */
  flushSync(): void
  /** Lines dropped because the reader stalled past maxPendingBytes. */
  dropped(): number
}

const codeOf = (error: unknown) =>
  typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined

/** Runs `run` once, `ms` from now, without keeping the process alive for it. */
export type Later = (run: () => void, ms: number) => void
const unrefTimeout: Later = (run, ms) => {
  setTimeout(run, ms).unref()
}

export interface DestinationOptions {
  /** The descriptor written to; stdout when absent. */
  fd?: number
  maxPendingBytes?: number
  /** How a write is put off (tests pass their own clock). */
  later?: Later
}

export function batchedDestination({
  fd = 1,
  maxPendingBytes = MAX_PENDING_BYTES,
  later = unrefTimeout,
}: DestinationOptions = {}): BatchedDestination {
  let lines: string[] = []
  let pendingBytes = 0
  /** The rest of a write the pipe took only part of. */
  let unwritten: Buffer | undefined
  let scheduled = false
  let closed = false
  let droppedLines = 0

  /** Writes until done, the pipe is full (false) or closed. */
  function writeOut(): boolean {
    if (lines.length > 0) {
      const text = lines.join('')
      lines = []
      if (unwritten === undefined) {
        try {
          const written = writeSync(fd, text)
          if (written < Buffer.byteLength(text)) unwritten = Buffer.from(text).subarray(written)
        } catch (error) {
          if (codeOf(error) === 'EAGAIN') unwritten = Buffer.from(text)
          else closed = true
        }
      } else unwritten = Buffer.concat([unwritten, Buffer.from(text)])
    }
    while (unwritten !== undefined && !closed) {
      try {
        const rest = unwritten.subarray(writeSync(fd, unwritten))
        unwritten = rest.length > 0 ? rest : undefined
      } catch (error) {
        if (codeOf(error) === 'EAGAIN') return false
        // EPIPE (nobody reads any more) or a descriptor gone: logging ends here.
        closed = true
      }
    }
    unwritten = undefined
    pendingBytes = 0
    return true
  }

  function flushLater() {
    scheduled = false
    if (writeOut()) return
    scheduled = true
    later(flushLater, RETRY_MS)
  }

  function flushSync() {
    for (let attempt = 0; attempt < 100 && !writeOut(); attempt++) Bun.sleepSync(RETRY_MS)
  }

  process.on('exit', flushSync)
  return {
    write(line: string) {
      if (closed) return
      if (pendingBytes + line.length > maxPendingBytes) {
        droppedLines++
        return
      }
      lines.push(line)
      pendingBytes += line.length
      // A pipe that refused the last write gets its retry, not an earlier one.
      if (pendingBytes >= BATCH_BYTES && unwritten === undefined && writeOut()) return
      if (!scheduled) {
        scheduled = true
        later(flushLater, FLUSH_MS)
      }
    },
    flushSync,
    dropped: () => droppedLines,
  }
}
