// The title the first turn of a new conversation streams (CONTRACT §11, §23),
// as soon as it is known. The conversation was stored with the first user
// message cut to 80 characters as its title; a model that writes titles (the
// `openai` provider: TITLE_MODEL's, else the reply's) is asked for a better one
// from that message alone when the turn starts, while the reply streams.
//
// The title item goes into the turn log as soon as the title is stored: while
// the reply streams, between its items (the reply log below serialises both);
// otherwise just before the completion patch (gpt4free stops reading there).
// The ending waits for a model still naming at most TITLE_WAIT_MS after a
// reply that finished normally, not at all after a failed or stopped one; past
// that the model's answer is dropped (its request aborted, never stored) and
// the first-message title streams. So the stored title, the list and the
// streamed item agree, and a slow title model never holds the ending up.

import { setTimeout as sleep } from 'node:timers/promises'
import { toStorableText } from '../../storable-text.ts'
import { type StoredMessage, type Turn, textOf, titleFrom } from '../messages.ts'
import { modelOf } from '../model/catalogue.ts'
import { storeTitle } from '../sql/title-repository.ts'
import { type FinishType, frameOf, titleGenerationItem } from '../stream/encoding.ts'
import { invalidateReads, type TurnDeps } from './deps.ts'
import type { ReplyLog } from './reply-log.ts'

/** How long the ending of a reply that finished normally waits for a title model still at work. */
export const TITLE_WAIT_MS = 2_000

/** The title still to stream as the turn ends: before its completion patch; undefined when none. */
export type EndingTitle = (finish: FinishType) => Promise<string | undefined>

/** A reply log that also carries the first turn's title item. */
export interface TitledReplyLog extends ReplyLog {
  /** Set for a conversation's first turn: ends the live writing and tells what the ending streams. */
  endingTitle?: EndingTitle
}

const isFirstTurn = (turn: Turn) => turn.metadata.first_turn === true

/** Resolves to `pending`'s value, or to undefined when it has not settled within `ms`. */
async function within<T>(pending: Promise<T>, ms: number): Promise<T | undefined> {
  if (ms <= 0) return Promise.race([pending, Promise.resolve(undefined)])
  const done = new AbortController()
  const timeout = sleep(ms, undefined, { signal: done.signal }).catch(() => undefined)
  try {
    return await Promise.race([pending, timeout])
  } finally {
    done.abort()
  }
}

/**
 * Starts naming the conversation of a first turn and returns `log` with the
 * title item woven in; any other turn's log is returned as it is. `signal`
 * (the turn's) drops a model answer that comes after the turn was aborted.
 */
export function titledReplyLog(
  deps: TurnDeps,
  turn: Turn,
  inputs: readonly StoredMessage[],
  log: ReplyLog,
  signal: AbortSignal,
): TitledReplyLog {
  if (!isFirstTurn(turn)) return log
  const userText = inputs[0] ? textOf(inputs[0].content) : ''
  // The title the conversation was stored with (accept.ts).
  const stored = titleFrom(userText)
  const naming = startNaming(deps, turn, userText, stored, signal)

  let tail: Promise<unknown> = Promise.resolve()
  /** Runs the log's steps one after another: the loop's items and the title's. */
  const serial = <T>(step: () => Promise<T>): Promise<T> => {
    const result = tail.then(step)
    tail = result.catch(() => {})
    return result
  }
  let live = true
  let streamed = false
  const streamTitle = (title: string) => {
    if (!live || streamed) return
    streamed = true
    // A failed write is the reply's own to handle: its next item or settle meets the fault.
    void serial(() => log.write(frameOf(titleGenerationItem(title, turn.conversationId)))).catch(
      () => {},
    )
  }
  void naming.title.then(streamTitle)

  return {
    ...log,
    write: (frame, chunk) => serial(() => log.write(frame, chunk)),
    settle: () => serial(() => log.settle()),
    async endingTitle(finish) {
      live = false
      // A title item on its way into the log lands before the ending's items.
      await tail
      if (streamed) return undefined
      const known = await within(naming.title, finish === 'stop' ? naming.waitMs : 0)
      return known ?? naming.giveUp()
    },
  }
}

interface Naming {
  /** The title once stored (the first message's when the model writes none). */
  title: Promise<string>
  /** How long the ending may wait for it. */
  waitMs: number
  /** The model took too long: its answer is dropped; the title the conversation keeps (undefined while unsure). */
  giveUp(): Promise<string | undefined>
}

function startNaming(
  deps: TurnDeps,
  turn: Turn,
  userText: string,
  stored: string,
  signal: AbortSignal,
): Naming {
  // TITLE_MODEL's model names conversations; without it, the model that writes the reply.
  const { provider } = modelOf(deps.models, deps.titleModel ?? turn.metadata.model_slug)
  const waitMs = deps.titleWaitMs ?? TITLE_WAIT_MS
  if (!provider.title || userText.trim() === '')
    return { title: Promise.resolve(stored), waitMs, giveUp: async () => stored }
  const asking = new AbortController()
  let storing = false
  const dropped = () => asking.signal.aborted || signal.aborted
  const giveUp = () => asking.abort()
  signal.addEventListener('abort', giveUp, { once: true })

  async function name(write: NonNullable<typeof provider.title>): Promise<string> {
    let written: string
    try {
      written = titleFrom(toStorableText(await write({ userText, signal: asking.signal })))
    } catch (error) {
      if (!dropped())
        deps.warn(
          'the model wrote no title; naming the conversation after its first message',
          error,
        )
      return stored
    }
    if (written === '' || written === stored || dropped()) return stored
    storing = true
    try {
      await storeTitle(deps.db, turn.conversationId, written)
      await invalidateReads(deps, turn.conversationId, turn.userId)
      return written
    } catch (error) {
      deps.warn('could not store the conversation title', error)
      return stored
    }
  }

  const title = name(provider.title.bind(provider))
  void title.finally(() => signal.removeEventListener('abort', giveUp))
  return {
    title,
    waitMs,
    async giveUp() {
      giveUp()
      // A title being stored is the conversation's: wait for the write (bounded), else stream none.
      return storing ? within(title, waitMs) : stored
    },
  }
}

/**
 * The title a turn's ending streams when its runner did not name the
 * conversation as it ran (a stop before the turn started, a dead runner's
 * turn): the title as stored, for a first turn whose log holds no title yet.
 */
export function storedEndingTitle(
  turn: Turn,
  storedTitle: string | undefined,
  titleStreamed: boolean,
): string | undefined {
  return isFirstTurn(turn) && !titleStreamed ? storedTitle : undefined
}
