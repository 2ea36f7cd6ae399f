// Ending the streams a dead runner left open after storing the reply
// (turn/abandoned-streams.ts), on every app backend: a stored reply's stream
// gets exactly the ending its runner would have written; a reply still in
// progress, a conversation whose lease is held, and a log ended meanwhile are
// left alone; a log whose turn was never stored is removed.
import { afterAll, describe, expect, test } from 'bun:test'
import { endAbandonedStreams } from '../../src/conversation/turn/abandoned-streams.ts'
import { createMemoryState, openRedisState, type State } from '../../src/state/state.ts'
import { appBackends, TEST_REDIS_URL, uniqueName } from '../support/backends.ts'
import {
  conversationApp,
  conversationIdOf,
  framesOf,
  newUser,
  sendAndRead,
  textMessage,
} from '../support/conversation-app.ts'

const RETENTION_MS = 600_000
/** Every unfinished log, however young. */
const now = { leaseMs: 5_000, olderThanMs: 0 }

for (const backend of appBackends())
  describe(`abandoned streams: ${backend.name}`, async () => {
    // A state of its own: the sweep below looks at every unfinished log in it.
    const state: State =
      backend.name === 'real' && TEST_REDIS_URL
        ? await openRedisState(TEST_REDIS_URL, {
            retentionMs: RETENTION_MS,
            keyPrefix: `${uniqueName('abandoned')}:`,
          })
        : createMemoryState({ retentionMs: RETENTION_MS })
    const { app, db, conversations } = await conversationApp({
      backend: { ...backend, state: async () => state },
    })
    const warnings: unknown[] = []
    const deps = { db, logs: state.logs, warn: (_: string, error: unknown) => warnings.push(error) }
    afterAll(async () => {
      await conversations.close(0)
      await state.close()
      expect(warnings).toEqual([])
    })

    /** A finished first turn: its reply's log identity and every frame it streamed. */
    async function storedTurn() {
      const userId = newUser()
      const { text } = await sendAndRead(app, {
        user_id: userId,
        messages: [textMessage('what would you call this conversation?')],
      })
      expect(text).toEndWith('data: [DONE]\n\n')
      await conversations.whenIdle()
      const conversationId = conversationIdOf(framesOf(text))
      const [reply] = await db.query<{ id: string }>(
        `SELECT id FROM messages WHERE conversation_id = $1 AND role = 'assistant'`,
        [conversationId],
      )
      const messageId = reply?.id ?? ''
      const frames = await state.logs.readAll(messageId)
      expect(frames.join('')).toBe(text)
      return { identity: { messageId, conversationId, userId }, frames }
    }

    /** Leaves the turn's log as a runner that died before ending its stream would: open, no ending. */
    async function abandon(turn: Awaited<ReturnType<typeof storedTurn>>) {
      const ending = turn.frames.findIndex((frame) => frame.includes('"/message/status"'))
      expect(ending).toBeGreaterThan(0)
      await state.logs.remove(turn.identity.messageId)
      await state.logs.open(turn.identity, turn.frames.slice(0, ending))
    }

    test('a stored reply left open gets the ending its runner would have streamed, byte for byte', async () => {
      const turn = await storedTurn()
      await abandon(turn)
      expect(await endAbandonedStreams(deps, state.leases, now)).toEqual([])
      expect(await state.logs.info(turn.identity.messageId)).toMatchObject({ finished: true })
      expect(await state.logs.readAll(turn.identity.messageId)).toEqual(turn.frames)
      // Ended: the next sweep finds nothing to do.
      const ids = (await state.logs.unfinished(0, 10_000)).map((log) => log.messageId)
      expect(ids).not.toContain(turn.identity.messageId)
    })

    test('a reply that ended in error gets an interrupted error item before its completion', async () => {
      const turn = await storedTurn()
      await abandon(turn)
      await db.query(
        `UPDATE messages SET status = 'finished_partial_completion',
                metadata = metadata || '{"finish_details":{"type":"error"}}'::jsonb
          WHERE conversation_id = $1 AND id = $2`,
        [turn.identity.conversationId, turn.identity.messageId],
      )
      await endAbandonedStreams(deps, state.leases, now)
      const frames = await state.logs.readAll(turn.identity.messageId)
      const tail = frames.slice(frames.findIndex((frame) => frame.includes('"type":"error"')))
      expect(tail[0]).toContain('"code":"interrupted"')
      expect(tail[1]).toContain('"v":"finished_partial_completion"')
      expect(tail.at(-1)).toBe('data: [DONE]\n\n')
    })

    test('a reply still in progress, or whose conversation lease is held, is left alone', async () => {
      const running = await storedTurn()
      await abandon(running)
      await db.query(
        `UPDATE messages SET status = 'in_progress' WHERE conversation_id = $1 AND id = $2`,
        [running.identity.conversationId, running.identity.messageId],
      )
      const busy = await storedTurn()
      await abandon(busy)
      const lease = await state.leases.acquire(busy.identity.conversationId, 60_000)
      expect(lease).toBeDefined()
      await endAbandonedStreams(deps, state.leases, now)
      expect(await state.logs.info(running.identity.messageId)).toMatchObject({ finished: false })
      expect(await state.logs.info(busy.identity.messageId)).toMatchObject({ finished: false })
      // The sweep asked for the lease: its holder is told to look again.
      expect(lease && (await state.leases.release(lease))).toBe(true)
      // Once the lease is free, the stored one is ended; the one in progress still is not.
      await endAbandonedStreams(deps, state.leases, now)
      expect(await state.logs.readAll(busy.identity.messageId)).toEqual(busy.frames)
      expect(await state.logs.info(running.identity.messageId)).toMatchObject({ finished: false })
      await state.logs.remove(running.identity.messageId)
    })

    test('a log whose turn was never stored is removed; young logs are not looked at', async () => {
      const orphan = {
        messageId: uniqueName('never-stored'),
        conversationId: crypto.randomUUID(),
        userId: newUser(),
      }
      await state.logs.open(orphan, ['event: delta_encoding\ndata: "v1"\n\n'])
      await endAbandonedStreams(deps, state.leases, { leaseMs: 5_000, olderThanMs: 60_000 })
      expect(await state.logs.info(orphan.messageId)).toMatchObject({ finished: false })
      await endAbandonedStreams(deps, state.leases, now)
      expect(await state.logs.info(orphan.messageId)).toBeUndefined()
    })
  })
