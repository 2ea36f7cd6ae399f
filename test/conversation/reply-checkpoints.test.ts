// Reply checkpoints (turn/reply-checkpoints.ts) on every database backend:
// one statement saves the text so far of many running replies, each only
// while it is in progress under the runner's fencing token; the batcher saves
// a reply's newest text at the next tick, nothing of a reply it was told
// ended, and a failing save is reported and retried with newer text. Each
// tick also touches every running reply's row - the runner's heartbeat, the
// only write with logs that outlive the process - and, with text, the frames
// of the reply's steps, which a takeover's claim reads back; a turn an earlier
// runner claimed is taken over only once its row has gone untouched for a
// lease: a live runner whose lease the turn state lost keeps its turn.
import { describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { checkpointReplies, claimNextTurn } from '../../src/conversation/sql/turn-repository.ts'
import { createReplyCheckpoints } from '../../src/conversation/turn/reply-checkpoints.ts'
import type { Db } from '../../src/storage/db.ts'
import { suiteDb } from '../support/backend-apps.ts'
import { appBackends } from '../support/backends.ts'

const EMPTY = '{"content_type":"text","parts":[""]}'

/** A conversation with assistant rows: [id, status, run_token]. */
async function conversationWith(db: Db, rows: [string, string, number][]): Promise<string> {
  const conversationId = randomUUID()
  const user = `checkpoint-${randomUUID()}`
  await db.query('INSERT INTO users (id) VALUES ($1)', [user])
  await db.query('INSERT INTO conversations (id, user_id, title) VALUES ($1, $2, $3)', [
    conversationId,
    user,
    't',
  ])
  for (const [id, status, token] of rows)
    await db.query(
      `INSERT INTO messages (id, conversation_id, role, content, status, run_token)
       VALUES ($1, $2, 'assistant', $3::text::jsonb, $4, $5)`,
      [id, conversationId, EMPTY, status, token],
    )
  return conversationId
}

async function textsOf(db: Db, conversationId: string): Promise<Record<string, string>> {
  const rows = await db.query<{ id: string; content: { parts: string[] } }>(
    'SELECT id, content FROM messages WHERE conversation_id = $1 ORDER BY seq',
    [conversationId],
  )
  return Object.fromEntries(rows.map((row) => [row.id, row.content.parts.join('')]))
}

/** Resolves once `check` holds, polling the database every 10 ms (at most 5 s). */
async function eventually(check: () => Promise<boolean>) {
  for (let tries = 0; tries < 500; tries++) {
    if (await check()) return
    await Bun.sleep(10)
  }
  throw new Error('not within 5 s')
}

for (const backend of appBackends())
  describe(backend.name, () => {
    const db = suiteDb(backend)

    test('one statement saves every running reply under its token, and nothing else', async () => {
      const conversationId = await conversationWith(db, [
        ['running-a', 'in_progress', 5],
        ['running-b', 'in_progress', 5],
        ['finished', 'finished_successfully', 5],
        ['taken-over', 'in_progress', 9],
      ])
      const hostile = 'quotes " \\ and unicode: é 漢字 🎉, </script>'
      await checkpointReplies(
        db,
        ['running-a', 'running-b', 'finished', 'taken-over'].map((messageId) => ({
          conversationId,
          messageId,
          token: 5,
          text: `${messageId}: ${hostile}`,
        })),
      )
      expect(await textsOf(db, conversationId)).toEqual({
        'running-a': `running-a: ${hostile}`,
        'running-b': `running-b: ${hostile}`,
        finished: '',
        'taken-over': '',
      })
      await checkpointReplies(db, [])
    })

    test('a heartbeat touches the row and keeps its text; a claim takes only a turn gone untouched', async () => {
      const conversationId = await conversationWith(db, [['running', 'in_progress', 5]])
      await checkpointReplies(db, [
        { conversationId, messageId: 'running', token: 5, text: 'kept' },
      ])
      await db.query(
        `UPDATE messages SET updated_at = now() - interval '1 hour' WHERE conversation_id = $1`,
        [conversationId],
      )
      // A heartbeat (no text): the row is fresh again, its text as it was.
      await checkpointReplies(db, [{ conversationId, messageId: 'running', token: 5 }])
      expect(await textsOf(db, conversationId)).toEqual({ running: 'kept' })
      const fresh = await claimNextTurn(db, conversationId, 6, 60_000)
      expect(fresh?.claim).toBeUndefined()
      expect(fresh?.turn.messageId).toBe('running')
      // Untouched for longer than the lease: the runner is gone, the turn is taken.
      await db.query(
        `UPDATE messages SET updated_at = now() - interval '1 hour' WHERE conversation_id = $1`,
        [conversationId],
      )
      const stale = await claimNextTurn(db, conversationId, 6, 60_000)
      expect(stale?.claim?.previousToken).toBe(5)
      expect(stale?.claim?.content.parts.join('')).toBe('kept')
    })

    test("with text, a reply's step frames are saved with it, growing as it goes, and a claim reads them back", async () => {
      const conversationId = await conversationWith(db, [['running', 'in_progress', 5]])
      const steps: string[] = ['event: delta\ndata: {"o":"add"}\n\n']
      const stepsOf = async () =>
        (
          await db.query<{ steps: string[] | null }>(
            'SELECT checkpoint_steps AS steps FROM messages WHERE conversation_id = $1',
            [conversationId],
          )
        )[0]?.steps
      const checkpoints = createReplyCheckpoints(db, 20, () => {}, true)
      try {
        checkpoints.update({ conversationId, messageId: 'running', token: 5, text: 'a', steps })
        await eventually(async () => (await stepsOf())?.length === 1)
        // The log appends to the same array: the next tick saves the new frame, the text unchanged.
        steps.push('event: delta\ndata: {"o":"patch"}\n\n')
        checkpoints.update({ conversationId, messageId: 'running', token: 5, text: 'a', steps })
        await eventually(async () => (await stepsOf())?.length === 2)
        expect(await stepsOf()).toEqual(steps)
        // Appended, not replaced: the row ends with every frame in order.
        steps.push('event: delta\ndata: {"o":"append"}\n\n', 'event: delta\ndata: {"v":"x"}\n\n')
        checkpoints.update({ conversationId, messageId: 'running', token: 5, text: 'a', steps })
        await eventually(async () => (await stepsOf())?.length === 4)
        expect(await stepsOf()).toEqual(steps)
        expect(await textsOf(db, conversationId)).toEqual({ running: 'a' })
      } finally {
        checkpoints.close()
      }
      // A heartbeat keeps them; a takeover's claim reads them back with the text.
      await checkpointReplies(db, [{ conversationId, messageId: 'running', token: 5 }])
      await db.query(
        `UPDATE messages SET updated_at = now() - interval '1 hour' WHERE conversation_id = $1`,
        [conversationId],
      )
      const stale = await claimNextTurn(db, conversationId, 6, 60_000)
      expect(stale?.claim?.checkpointSteps).toEqual(steps)
      expect(stale?.claim?.content.parts.join('')).toBe('a')
    })

    test('without text (logs that outlive the process) the batcher only touches rows, every tick', async () => {
      const conversationId = await conversationWith(db, [['one', 'in_progress', 1]])
      const touchedAt = async () =>
        (
          await db.query<{ at: Date }>(
            'SELECT updated_at AS at FROM messages WHERE conversation_id = $1',
            [conversationId],
          )
        )[0]?.at.getTime() ?? 0
      await db.query(
        `UPDATE messages SET updated_at = now() - interval '1 hour' WHERE conversation_id = $1`,
        [conversationId],
      )
      const before = await touchedAt()
      const checkpoints = createReplyCheckpoints(db, 20, () => {}, false)
      try {
        checkpoints.update({ conversationId, messageId: 'one', token: 1, text: 'not saved' })
        await eventually(async () => (await touchedAt()) > before)
        expect(await textsOf(db, conversationId)).toEqual({ one: '' })
        // Touched again at later ticks, with no new text.
        const first = await touchedAt()
        await eventually(async () => (await touchedAt()) > first)
      } finally {
        checkpoints.close()
      }
    })

    test("the batcher saves each reply's newest text at a tick, and none of a reply that ended", async () => {
      const conversationId = await conversationWith(db, [
        ['one', 'in_progress', 1],
        ['two', 'in_progress', 1],
      ])
      const warnings: string[] = []
      const checkpoints = createReplyCheckpoints(db, 20, (message) => warnings.push(message), true)
      try {
        for (const text of ['a', 'ab', 'abc'])
          checkpoints.update({ conversationId, messageId: 'one', token: 1, text })
        checkpoints.update({ conversationId, messageId: 'two', token: 1, text: 'never saved' })
        checkpoints.forget('two')
        await eventually(async () => (await textsOf(db, conversationId)).one === 'abc')
        expect(await textsOf(db, conversationId)).toEqual({ one: 'abc', two: '' })
        checkpoints.update({ conversationId, messageId: 'one', token: 1, text: 'abcd' })
        await eventually(async () => (await textsOf(db, conversationId)).one === 'abcd')
        expect(warnings).toEqual([])
      } finally {
        checkpoints.close()
      }
    })
  })

/** A Db that keeps the rows of each checkpoint statement it is sent, and fails the next one when told. */
function recordingDb<Row>() {
  const statements: Row[][] = []
  let failing = false
  const db = {
    async query(_sql: string, params: unknown[]) {
      if (failing) {
        failing = false
        throw new Error('database away')
      }
      statements.push(JSON.parse(params[0] as string) as Row[])
      return []
    },
  } as unknown as Db
  return { db, statements, failNext: () => (failing = true) }
}

test('each tick sends only the step frames streamed since the last; after a failed save, all of them', async () => {
  const { db, statements, failNext } = recordingDb<{ steps: string[] | null; steps_from: number }>()
  const sent = () => statements.flat()
  const checkpoints = createReplyCheckpoints(db, 10, () => {}, true)
  const conversationId = randomUUID()
  const steps = ['f1', 'f2']
  const update = () =>
    checkpoints.update({ conversationId, messageId: 'm', token: 1, text: 't', steps })
  try {
    update()
    await eventually(async () => sent().length === 1)
    steps.push('f3')
    update()
    await eventually(async () => sent().some((row) => row.steps?.includes('f3')))
    failNext()
    steps.push('f4')
    update()
    await eventually(async () => sent().some((row) => row.steps?.includes('f4')))
    const withSteps = sent().filter((row) => row.steps !== null)
    expect(withSteps.map((row) => [row.steps, row.steps_from])).toEqual([
      [['f1', 'f2'], 0],
      [['f3'], 2],
      // The save that carried f4 failed: the next sends every frame, replacing what the row holds.
      [['f1', 'f2', 'f3', 'f4'], 0],
    ])
  } finally {
    checkpoints.close()
  }
})

test('a save that fails is reported, and the next tick saves the newer text', async () => {
  const { db, statements, failNext } = recordingDb<{ content: { parts: string[] } | null }>()
  failNext()
  const saved = () => statements.map((rows) => rows.map((row) => row.content?.parts[0] ?? ''))
  const warnings: string[] = []
  const checkpoints = createReplyCheckpoints(db, 10, (message) => warnings.push(message), true)
  try {
    checkpoints.update({ conversationId: randomUUID(), messageId: 'm', token: 1, text: 'first' })
    await eventually(async () => warnings.length === 1)
    expect(warnings).toEqual(['could not checkpoint the replies'])
    checkpoints.update({ conversationId: randomUUID(), messageId: 'm', token: 1, text: 'second' })
    await eventually(async () => saved().length === 1)
    expect(saved()).toEqual([['second']])
  } finally {
    checkpoints.close()
  }
})
