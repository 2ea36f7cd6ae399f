// A turn's stream as each reader gets it (CONTRACT §19): the log's frames from
// an offset, followed live, and always an end. The log is where readers and
// the runner meet, and it can fail under a reader: Redis frozen, killed and
// restarted empty, flushed, failing over. Then the reader waits for the log to
// answer again - the runner still holds the reply and writes it back
// (log-restore.ts) - and goes on from the item it reached, so nothing is seen
// twice or skipped. A reader whose log stays unreachable or gone for
// `recoveryMs`, or that is still open when the process stops, ends the stream
// itself: an error item naming why, the completion patch of a partial reply,
// message_stream_complete and [DONE] - never a connection closed mid-stream.
// Where the reply is already stored by then (its log was flushed after the
// runner ended it, or the turn state stayed away while the database did not),
// the reader ends as the stored reply did instead, with the text it had not
// yet been sent: what it was sent is then what is stored.
import { setTimeout as sleep } from 'node:timers/promises'
import type { TurnLogStore } from '../../state/turn-log/turn-log-store.ts'
import type { StoredReply } from '../sql/turn-repository.ts'
import {
  appendedText,
  appendFrame,
  completionItem,
  DONE_FRAME,
  doneItem,
  errorItem,
  frameOf,
  type StreamErrorCode,
  streamCompleteItem,
} from '../stream/encoding.ts'

export interface StreamReaderOptions {
  /** How long a reader waits for a failing or vanished log before it ends the stream itself. */
  recoveryMs: number
  /** How often a silent reader asks whether its log still answers. */
  checkMs: number
  /** Aborted when the process stops: readers still open end at once with their own last items. */
  stopping: AbortSignal
  /** The reply as stored, asked while the log fails or is gone. */
  storedReply?: (turn: {
    conversationId: string
    messageId: string
  }) => Promise<StoredReply | undefined>
}

export const STATE_UNAVAILABLE_DETAIL =
  'The reply stopped streaming: the turn state store did not answer. The text so far is kept.'
export const SERVER_STOPPED_DETAIL =
  'The reply stopped streaming: the server shut down. The text so far is kept; it may be finished by another server.'

/** The last items a reader writes itself when its log cannot end the stream. */
export function readerEnding(
  turn: { conversationId: string; messageId: string },
  code: StreamErrorCode,
  detail: string,
): string[] {
  return [
    errorItem(turn.conversationId, turn.messageId, detail, code),
    completionItem('error'),
    streamCompleteItem(turn.conversationId),
    doneItem(),
  ].map(frameOf)
}

/** Why the inner read stopped: its log ended or failed, the wait ran out, or the process stops. */
type Outcome = 'ended' | 'failed' | 'gave_up' | 'stopping' | 'aborted'

/** Resolves after ms, or at once when signal aborts (never rejects). */
const wait = (ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal }).catch(() => {})

/** How long a stopping process lets a reader take items already on their way. */
const LAST_ITEMS_MS = 250

export async function* readTurnStream(
  logs: TurnLogStore,
  turn: { conversationId: string; messageId: string },
  offset: number,
  signal: AbortSignal,
  options: StreamReaderOptions,
): AsyncGenerator<readonly string[]> {
  let next = offset
  /** What this reader was sent, from item 0 (only then can it tell a stored reply's rest). */
  const sent: (readonly string[])[] = []
  /** Since when the log has failed or been missing; undefined while it answers. */
  let failingSince: number | undefined
  let stateFailed = false
  const either = AbortSignal.any([signal, options.stopping])

  /** Whether the log answers now; false (and since when) when it fails or is missing. */
  async function answers(): Promise<boolean> {
    try {
      const info = await logs.info(turn.messageId)
      if (info) failingSince = undefined
      else failingSince ??= Date.now()
      return info !== undefined
    } catch {
      stateFailed = true
      failingSince ??= Date.now()
      return false
    }
  }
  const outOfTime = () =>
    failingSince !== undefined && Date.now() - failingSince >= options.recoveryMs

  /** The rest of a reply stored meanwhile, and its ending; undefined while it is not stored. */
  async function storedEnding(): Promise<string[] | undefined> {
    if (offset !== 0 || !options.storedReply) return undefined
    const stored = await options.storedReply(turn).catch(() => undefined)
    if (!stored?.finish) return undefined
    const seen = appendedText(sent.flat())
    if (!stored.text.startsWith(seen))
      return readerEnding(turn, 'state_unavailable', STATE_UNAVAILABLE_DETAIL)
    const rest = stored.text.slice(seen.length)
    return [
      ...(rest ? [appendFrame(rest)] : []),
      // The log could not carry the real ending: say which store failed, then end as stored.
      frameOf(
        errorItem(
          turn.conversationId,
          turn.messageId,
          STATE_UNAVAILABLE_DETAIL,
          'state_unavailable',
        ),
      ),
      ...[completionItem(stored.finish), streamCompleteItem(turn.conversationId), doneItem()].map(
        frameOf,
      ),
    ]
  }

  while (!signal.aborted) {
    const inner = new AbortController()
    const reading = logs.read(turn.messageId, next, AbortSignal.any([signal, inner.signal]))
    let outcome: Outcome = 'ended'
    let pending: Promise<IteratorResult<readonly string[]>> | undefined
    try {
      let stopAt: number | undefined
      // One timer per check period, not one per batch: a streaming reader
      // only looks at its log when a whole period passed without an item.
      let tick: Promise<undefined> | undefined
      let tickFrom = 0
      let lastItemAt = 0
      for (;;) {
        pending ??= reading.next()
        if (!tick) {
          tickFrom = Date.now()
          // Once the process stops, only the last items already on their way are waited for.
          tick = (
            stopAt === undefined
              ? wait(options.checkMs, either)
              : wait(Math.max(0, stopAt - tickFrom), signal)
          ).then(() => undefined)
        }
        const step = await Promise.race([pending, tick])
        if (step === undefined) {
          tick = undefined
          if (signal.aborted) {
            outcome = 'aborted'
            break
          }
          if (options.stopping.aborted) {
            stopAt ??= Date.now() + LAST_ITEMS_MS
            if (Date.now() >= stopAt) {
              outcome = 'stopping'
              break
            }
            continue
          }
          // Items came during the period: no silence to ask about.
          if (lastItemAt >= tickFrom) continue
          // Silence: is the log still there to wait on?
          if (!(await answers())) {
            const ending = await storedEnding()
            if (ending) {
              yield ending
              return
            }
            if (outOfTime()) {
              outcome = 'gave_up'
              break
            }
          }
          continue
        }
        pending = undefined
        if (step.done) break
        lastItemAt = Date.now()
        failingSince = undefined
        const batch = step.value
        next += batch.length
        if (offset === 0) sent.push(batch)
        yield batch
        if (batch[batch.length - 1] === DONE_FRAME) return
      }
    } catch {
      stateFailed = true
      outcome = 'failed'
    } finally {
      inner.abort()
      // The read may still be waiting on the store: let it end on its own.
      pending?.catch(() => {})
      void reading.return(undefined).catch(() => {})
    }
    if (outcome === 'aborted' || signal.aborted) return
    if (outcome === 'stopping' || outcome === 'gave_up') break
    if (outcome === 'ended') {
      // The log ended without [DONE]: finished at this offset (a resume at
      // its end), or it failed or vanished under the reader.
      const info = await logs.info(turn.messageId).catch(() => {
        stateFailed = true
        return null
      })
      if (info?.finished && next >= info.length) return
      if (info) {
        failingSince = undefined
        await wait(50, either)
        continue
      }
      failingSince ??= Date.now()
    } else failingSince ??= Date.now()
    const ending = await storedEnding()
    if (ending) {
      yield ending
      return
    }
    if (options.stopping.aborted || outOfTime()) break
    await wait(Math.min(options.checkMs, 250), either)
  }
  if (signal.aborted) return
  const ending = await storedEnding()
  if (ending) {
    yield ending
    return
  }
  yield options.stopping.aborted && !stateFailed
    ? readerEnding(turn, 'interrupted', SERVER_STOPPED_DETAIL)
    : readerEnding(turn, 'state_unavailable', STATE_UNAVAILABLE_DETAIL)
}
