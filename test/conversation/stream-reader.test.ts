// A turn's stream as readers get it (stream-reader.ts) and its log written
// back after a fault (log-restore.ts), on each TurnLogStore adapter: the
// in-process one, and Redis read from the writing process (its mirror) and
// from another process (the follower). A log that vanishes under its readers
// (Redis restarted empty, flushed) and is written back goes on for them from
// the item they reached, nothing twice; one that never comes back, or a
// process that stops, ends each stream with the reader's own last items.
import { afterAll, describe, expect, test } from 'bun:test'
import Redis from 'ioredis'
import { appendFrame } from '../../src/conversation/stream/encoding.ts'
import { restoreLog } from '../../src/conversation/turn/log-restore.ts'
import {
  readerEnding,
  readTurnStream,
  STATE_UNAVAILABLE_DETAIL,
} from '../../src/conversation/turn/stream-reader.ts'
import { createMemoryTurnLogs } from '../../src/state/turn-log/memory-turn-logs.ts'
import { createRedisTurnLogs } from '../../src/state/turn-log/redis-turn-logs.ts'
import type { TurnLogStore } from '../../src/state/turn-log/turn-log-store.ts'
import { TEST_REDIS_URL, uniqueName } from '../support/backends.ts'

const DONE = 'data: [DONE]\n\n'
const frame = (n: number) => `data: {"n":${n}}\n\n`

interface Stores {
  name: string
  /** The store the runner writes. */
  writer: TurnLogStore
  /** The store a reader reads: the same, or another process's. */
  reader: TurnLogStore
}

const closers: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const close of closers) await close()
})

function storeSets(): Stores[] {
  const memory = createMemoryTurnLogs({ retentionMs: 60_000 })
  closers.push(() => memory.close())
  const sets: Stores[] = [{ name: 'memory', writer: memory, reader: memory }]
  if (TEST_REDIS_URL) {
    const url = TEST_REDIS_URL
    const keyPrefix = `${uniqueName('reader')}:`
    const clients = [new Redis(url), new Redis(url)]
    const [one, other] = clients.map((redis) =>
      createRedisTurnLogs({ redis, keyPrefix, retentionMs: 60_000, blockMs: 100 }),
    ) as [TurnLogStore, TurnLogStore]
    closers.push(async () => {
      await one.close()
      await other.close()
      for (const client of clients) client.disconnect()
    })
    sets.push({ name: 'redis, read where it is written', writer: one, reader: one })
    sets.push({ name: 'redis, read by another process', writer: one, reader: other })
  }
  return sets
}

const options = (recoveryMs: number, stopping = new AbortController().signal) => ({
  recoveryMs,
  checkMs: 50,
  stopping,
})

/** Reads a whole stream, flattened. */
async function readAll(stream: AsyncIterable<readonly string[]>): Promise<string[]> {
  const all: string[] = []
  for await (const batch of stream) all.push(...batch)
  return all
}

/** A stream being read: everything, once it ends, and a wait for the first `count` items. */
function reading(stream: AsyncIterable<readonly string[]>) {
  const seen: string[] = []
  const waiters = new Set<() => void>()
  const all = (async () => {
    for await (const batch of stream) {
      seen.push(...batch)
      for (const wake of [...waiters]) wake()
    }
    for (const wake of [...waiters]) wake()
    return seen
  })()
  const atLeast = (count: number) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (seen.length < count) return
        waiters.delete(check)
        resolve()
      }
      waiters.add(check)
      check()
    })
  return { all, atLeast }
}

const newTurn = () => ({
  messageId: uniqueName('msg'),
  conversationId: crypto.randomUUID(),
  userId: 'alice',
})

for (const { name, writer, reader } of storeSets())
  describe(`a turn's stream and its log written back (${name})`, () => {
    test('reads every item once and ends at [DONE]', async () => {
      const turn = newTurn()
      await writer.open(turn, [frame(0), frame(1)])
      const read = readAll(
        readTurnStream(reader, turn, 0, new AbortController().signal, options(5_000)),
      )
      await writer.append(turn.messageId, [frame(2), DONE], 0)
      await writer.finish(turn.messageId, 0)
      expect(await read).toEqual([frame(0), frame(1), frame(2), DONE])
    })

    test('a resume at the end of a finished stream reads nothing and ends', async () => {
      const turn = newTurn()
      await writer.open(turn, [frame(0), DONE])
      await writer.finish(turn.messageId, 0)
      const read = await readAll(
        readTurnStream(reader, turn, 2, new AbortController().signal, options(5_000)),
      )
      expect(read).toEqual([])
    })

    test('a log that vanishes and is written back goes on from the item reached, nothing twice', async () => {
      const turn = newTurn()
      const frames = [frame(0), frame(1), frame(2)]
      await writer.open(turn, frames)
      await writer.claim(turn.messageId, 7)
      const read = reading(
        readTurnStream(reader, turn, 0, new AbortController().signal, options(10_000)),
      )
      await read.atLeast(3)
      // The store loses the log (a flush), then the runner writes it back with what came since.
      await writer.remove(turn.messageId)
      frames.push(frame(3), frame(4))
      const outcome = await restoreLog(
        writer,
        { identity: turn, token: 7, frames: async () => frames },
        { deadline: Date.now() + 5_000, signal: new AbortController().signal },
      )
      expect(outcome).toBe('restored')
      await writer.append(turn.messageId, [DONE], 7)
      await writer.finish(turn.messageId, 7)
      expect(await read.all).toEqual([...frames, DONE])
    })

    test('written back after losing its tail: only what the log lacks is appended', async () => {
      const turn = newTurn()
      await writer.open(turn, [frame(0)])
      await writer.claim(turn.messageId, 3)
      const frames = [frame(0), frame(1), frame(2)]
      const outcome = await restoreLog(
        writer,
        { identity: turn, token: 3, frames: async () => frames },
        { deadline: Date.now() + 5_000, signal: new AbortController().signal },
      )
      expect(outcome).toBe('restored')
      expect(await writer.readAll(turn.messageId)).toEqual(frames)
    })

    test('a log another runner claimed is not written back', async () => {
      const turn = newTurn()
      await writer.open(turn, [frame(0)])
      await writer.claim(turn.messageId, 9)
      const outcome = await restoreLog(
        writer,
        { identity: turn, token: 5, frames: async () => [frame(0), frame(1)] },
        { deadline: Date.now() + 5_000, signal: new AbortController().signal },
      )
      expect(outcome).toBe('lost')
      expect(await writer.readAll(turn.messageId)).toEqual([frame(0)])
    })

    test('a log that never comes back ends the stream with the reader’s own last items', async () => {
      const turn = newTurn()
      await writer.open(turn, [frame(0)])
      const read = reading(
        readTurnStream(reader, turn, 0, new AbortController().signal, options(300)),
      )
      await read.atLeast(1)
      await writer.remove(turn.messageId)
      expect(await read.all).toEqual([
        frame(0),
        ...readerEnding(turn, 'state_unavailable', STATE_UNAVAILABLE_DETAIL),
      ])
    })

    test('a log gone after its reply was stored: the reader gets the rest of the stored reply and its ending', async () => {
      const turn = newTurn()
      await writer.open(turn, [frame(0), appendFrame('Hello')])
      const read = reading(
        readTurnStream(reader, turn, 0, new AbortController().signal, {
          ...options(60_000),
          storedReply: async (asked) => {
            expect(asked.messageId).toBe(turn.messageId)
            return { text: 'Hello, world', finish: 'stop' }
          },
        }),
      )
      await read.atLeast(2)
      await writer.remove(turn.messageId)
      const all = await read.all
      expect(all.slice(0, 3)).toEqual([frame(0), appendFrame('Hello'), appendFrame(', world')])
      // Which store failed, then the ending as stored.
      expect(all.at(-4)).toContain('"code":"state_unavailable"')
      expect(all.at(-3)).toContain('"finish_details":{"type":"stop"}')
      expect(all.at(-2)).toContain('"type":"message_stream_complete"')
      expect(all.at(-1)).toBe(DONE)
    })

    test('a process that stops ends the stream still open with an interrupted ending', async () => {
      const turn = newTurn()
      await writer.open(turn, [frame(0)])
      const stopping = new AbortController()
      const read = reading(
        readTurnStream(
          reader,
          turn,
          0,
          new AbortController().signal,
          options(60_000, stopping.signal),
        ),
      )
      await read.atLeast(1)
      stopping.abort()
      const all = await read.all
      expect(all.slice(0, 1)).toEqual([frame(0)])
      expect(all.at(-1)).toBe(DONE)
      expect(all.at(-4)).toContain('"code":"interrupted"')
      expect(all.at(-3)).toContain('"finish_details":{"type":"error"}')
      expect(all.at(-2)).toContain('"type":"message_stream_complete"')
    })

    test('a reader that goes away ends without any item of its own', async () => {
      const turn = newTurn()
      await writer.open(turn, [frame(0)])
      const gone = new AbortController()
      const read = reading(readTurnStream(reader, turn, 0, gone.signal, options(60_000)))
      await read.atLeast(1)
      gone.abort()
      expect(await read.all).toEqual([frame(0)])
    })
  })
