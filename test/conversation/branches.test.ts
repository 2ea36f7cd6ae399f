// Branches (CONTRACT §10) over HTTP: an edit (`next` at an older parent) and a
// regenerate (`variant`) grow the message tree; the detail shows the current
// branch, `current_node` and chatgpt.com's `mapping`; the model's context and
// `chat:{id}:context` are the branch being answered; bad placements are clear
// 4xx errors that change nothing.
import { beforeAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { localReply } from '../../src/conversation/model/local.ts'
import { type ContextMessage, ModelError } from '../../src/conversation/model/provider.ts'
import { contextKey, historyKey } from '../../src/conversation/reads/cache-keys.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationApp,
  conversationIdOf,
  dataOf,
  type Frame,
  get,
  newUser,
  post,
  sendAndRead,
  textMessage,
} from '../support/conversation-app.ts'
import { sseReader } from '../support/sse-reader.ts'
import { gatedModel } from '../support/test-models.ts'
import { DETAIL_KEYS } from '../support/transfer.ts'

const SEND = '/backend-api/f/conversation'
const ROOT = 'client-created-root'

interface Detail {
  conversation_id: string
  current_node: string
  messages: {
    id: string
    role: string
    content: { parts: string[] }
    created_at: string
    parent_id: string | null
  }[]
  mapping: Record<
    string,
    {
      id: string
      parent: string | null
      children: string[]
      message: {
        id: string
        author: { role: string }
        content: { content_type: string; parts: string[] }
        create_time: number
        status: string
        metadata: Record<string, unknown>
      } | null
    }
  >
}

/** The kind of an item: its `type`, its delta `o`, or `[DONE]`. */
const kindOf = (frame: Frame) => {
  if (frame.event === 'delta_encoding' || frame.data === '[DONE]') return frame.event ?? frame.data
  const item = dataOf<{ type?: string; o?: string }>(frame)
  return item.type ?? item.o
}

const replyOf = (frames: Frame[]) =>
  frames
    .filter((frame) => frame.data.includes('"/message/content/parts/0"'))
    .map((frame) => dataOf<{ v: [{ v: string }] }>(frame).v[0].v)
    .join('')

/** The local model's reply to a branch given as alternating user / assistant texts. */
const replyTo = (...texts: string[]) =>
  localReply(
    texts.map(
      (content, i): ContextMessage => ({ role: i % 2 === 0 ? 'user' : 'assistant', content }),
    ),
  )

describeEachBackend({}, (t, backend) => {
  /** Sends and reads the whole stream; the reply's id and text, and what was added. */
  async function send(body: Record<string, unknown>) {
    const { response, frames } = await sendAndRead(t.app, body)
    expect(response.status).toBe(200)
    const add = dataOf<{
      v: { message: { id: string; metadata: Record<string, string> }; conversation_id: string }
    }>(frames.find((frame) => frame.data.includes('"o":"add"')))
    return {
      frames,
      cid: add.v.conversation_id,
      aid: add.v.message.id,
      metadata: add.v.message.metadata,
      reply: replyOf(frames),
    }
  }

  async function detail(user: string, cid: string): Promise<Detail> {
    const response = await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
    expect(response.status).toBe(200)
    return (await response.json()) as Detail
  }

  const contextIds = async (cid: string) =>
    (await t.cache.listAll(contextKey(cid))).map(
      (entry) => (JSON.parse(entry) as { id: string }).id,
    )

  /** u1, a1, u2, a2: a conversation of two turns with known message ids. */
  async function twoTurns(user: string) {
    const first = await send({ user_id: user, messages: [textMessage('first question', 'u1')] })
    const second = await send({
      user_id: user,
      conversation_id: first.cid,
      messages: [textMessage('second question', 'u2')],
    })
    return { cid: first.cid, a1: first, a2: second }
  }

  describe('a linear conversation', () => {
    test('each message follows the one before; the detail shows the tree chatgpt.com shows', async () => {
      const user = newUser()
      const { cid, a1, a2 } = await twoTurns(user)
      const body = await detail(user, cid)
      expect(Object.keys(body)).toEqual(DETAIL_KEYS)
      expect(body.current_node).toBe(a2.aid)
      expect(body.messages.map((m) => [m.id, m.parent_id])).toEqual([
        ['u1', null],
        [a1.aid, 'u1'],
        ['u2', a1.aid],
        [a2.aid, 'u2'],
      ])
      expect(Object.keys(body.messages[0] ?? {})).toEqual([
        'id',
        'role',
        'content',
        'created_at',
        'parent_id',
      ])
      // The root node, then one node per message.
      expect(body.mapping[ROOT]).toStrictEqual({
        id: ROOT,
        parent: null,
        children: ['u1'],
        message: null,
      })
      expect(Object.keys(body.mapping).sort()).toEqual([ROOT, 'u1', 'u2', a1.aid, a2.aid].sort())
      const top = body.mapping.u1
      expect(top?.parent).toBe(ROOT)
      expect(top?.children).toEqual([a1.aid])
      expect(Object.keys(top?.message ?? {})).toEqual([
        'id',
        'author',
        'create_time',
        'update_time',
        'content',
        'status',
        'end_turn',
        'weight',
        'metadata',
        'recipient',
        'channel',
      ])
      expect(top?.message).toMatchObject({
        id: 'u1',
        author: { role: 'user', name: null, metadata: {} },
        end_turn: null,
        weight: 1,
        recipient: 'all',
        channel: null,
        content: { content_type: 'text', parts: ['first question'] },
        status: 'finished_successfully',
        metadata: {},
      })
      const reply = body.mapping[a2.aid]
      expect(reply?.parent).toBe('u2')
      expect(reply?.children).toEqual([])
      expect(reply?.message?.content.parts).toEqual([a2.reply])
      expect(reply?.message?.metadata).toStrictEqual({
        model_slug: 'local-echo',
        parent_id: 'u2',
        message_type: 'next',
        finish_details: { type: 'stop' },
      })
      // create_time is Unix seconds, the same instant as created_at.
      const created = Date.parse(body.messages[3]?.created_at ?? '')
      expect(Math.abs((reply?.message?.create_time ?? 0) * 1000 - created)).toBeLessThan(1)
    })

    test('the assistant message says it is the next reply', async () => {
      const user = newUser()
      const { a1 } = await twoTurns(user)
      expect(a1.metadata).toMatchObject({ parent_id: 'u1', message_type: 'next' })
    })
  })

  describe('edit: next at an older parent starts a new branch', () => {
    test('the new branch is current, the old one stays in the mapping', async () => {
      const user = newUser()
      const { cid, a1, a2 } = await twoTurns(user)
      await detail(user, cid) // cached now: the send must invalidate it
      const edit = await send({
        user_id: user,
        conversation_id: cid,
        parent_message_id: a1.aid,
        messages: [textMessage('second question, edited', 'u2e')],
      })
      expect(edit.frames.map(kindOf).slice(0, 4)).toEqual([
        'delta_encoding',
        'resume_conversation_token',
        'input_message',
        'add',
      ])
      const body = await detail(user, cid)
      expect(body.current_node).toBe(edit.aid)
      expect(body.messages.map((m) => m.id)).toEqual(['u1', a1.aid, 'u2e', edit.aid])
      expect(body.mapping[a1.aid]?.children).toEqual(['u2', 'u2e'])
      expect(body.mapping.u2?.children).toEqual([a2.aid])
      expect(body.mapping.u2e?.parent).toBe(a1.aid)
    })

    test('the model answers the edited branch, and the context list is that branch', async () => {
      const user = newUser()
      const { cid, a1 } = await twoTurns(user)
      const edit = await send({
        user_id: user,
        conversation_id: cid,
        parent_message_id: a1.aid,
        messages: [textMessage('something else', 'u2e')],
      })
      expect(edit.reply).toBe(replyTo('first question', a1.reply, 'something else'))
      expect(await contextIds(cid)).toEqual(['u1', a1.aid, 'u2e', edit.aid])
      // A next send with no parent follows the current node: the edited branch.
      const more = await send({
        user_id: user,
        conversation_id: cid,
        messages: [textMessage('go on', 'u3')],
      })
      expect(more.reply).toBe(
        replyTo('first question', a1.reply, 'something else', edit.reply, 'go on'),
      )
      expect((await detail(user, cid)).messages.map((m) => m.parent_id)).toEqual([
        null,
        'u1',
        a1.aid,
        'u2e',
        edit.aid,
        'u3',
      ])
    })

    test('switching back to an older branch rebuilds the context from that branch', async () => {
      const user = newUser()
      const { cid, a1, a2 } = await twoTurns(user)
      await send({
        user_id: user,
        conversation_id: cid,
        parent_message_id: a1.aid,
        messages: [textMessage('a detour', 'u2e')],
      })
      const back = await send({
        user_id: user,
        conversation_id: cid,
        parent_message_id: a2.aid,
        messages: [textMessage('back on the first branch', 'u3')],
      })
      expect(back.reply).toBe(
        replyTo(
          'first question',
          a1.reply,
          'second question',
          a2.reply,
          'back on the first branch',
        ),
      )
      expect(await contextIds(cid)).toEqual(['u1', a1.aid, 'u2', a2.aid, 'u3', back.aid])
      expect((await detail(user, cid)).messages.map((m) => m.id)).toEqual([
        'u1',
        a1.aid,
        'u2',
        a2.aid,
        'u3',
        back.aid,
      ])
    })

    test('the branch is rebuilt from the database when the cache lost it', async () => {
      const user = newUser()
      const { cid, a1 } = await twoTurns(user)
      await t.cache.del(contextKey(cid))
      const edit = await send({
        user_id: user,
        conversation_id: cid,
        parent_message_id: a1.aid,
        messages: [textMessage('after a flush', 'u2e')],
      })
      expect(edit.reply).toBe(replyTo('first question', a1.reply, 'after a flush'))
      expect(await contextIds(cid)).toEqual(['u1', a1.aid, 'u2e', edit.aid])
    })

    test('client-created-root starts a second tree top in the same conversation', async () => {
      const user = newUser()
      const { cid } = await twoTurns(user)
      const fresh = await send({
        user_id: user,
        conversation_id: cid,
        parent_message_id: ROOT,
        messages: [textMessage('start over', 'top2')],
      })
      expect(fresh.reply).toBe(replyTo('start over'))
      const body = await detail(user, cid)
      expect(body.mapping[ROOT]?.children).toEqual(['u1', 'top2'])
      expect(body.messages.map((m) => m.id)).toEqual(['top2', fresh.aid])
      expect(body.messages[0]?.parent_id).toBeNull()
      expect(await contextIds(cid)).toEqual(['top2', fresh.aid])
    })
  })

  describe('regenerate: variant answers a stored user message again', () => {
    test('the new reply is a sibling of the earlier one; no input_message is streamed', async () => {
      const user = newUser()
      const { cid, a1, a2 } = await twoTurns(user)
      await detail(user, cid)
      const again = await send({
        user_id: user,
        conversation_id: cid,
        action: 'variant',
        parent_message_id: a1.aid,
        messages: [textMessage('second question', 'u2')],
      })
      expect(again.frames.map(kindOf)).not.toContain('input_message')
      expect(again.frames.slice(0, 3).map(kindOf)).toEqual([
        'delta_encoding',
        'resume_conversation_token',
        'add',
      ])
      expect(again.metadata).toMatchObject({ parent_id: 'u2', message_type: 'variant' })
      // Same branch, same context: the deterministic model gives the same reply.
      expect(again.reply).toBe(a2.reply)
      expect(again.reply).toBe(replyTo('first question', a1.reply, 'second question'))

      const body = await detail(user, cid)
      expect(body.current_node).toBe(again.aid)
      expect(body.messages.map((m) => m.id)).toEqual(['u1', a1.aid, 'u2', again.aid])
      expect(body.mapping.u2?.children).toEqual([a2.aid, again.aid])
      expect(body.mapping[again.aid]?.message?.metadata).toMatchObject({
        message_type: 'variant',
      })
      // The user message was not stored again.
      const rows = await t.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM messages WHERE conversation_id = $1 AND id = 'u2'",
        [cid],
      )
      expect(rows[0]?.n).toBe(1)
      expect(await contextIds(cid)).toEqual(['u1', a1.aid, 'u2', again.aid])
    })

    test('without parent_message_id, and from the first message of a conversation', async () => {
      const user = newUser()
      const { cid, a1 } = await twoTurns(user)
      const again = await send({
        user_id: user,
        conversation_id: cid,
        action: 'variant',
        messages: [textMessage('first question', 'u1')],
      })
      expect(again.reply).toBe(replyTo('first question'))
      const body = await detail(user, cid)
      expect(body.mapping.u1?.children).toEqual([a1.aid, again.aid])
      expect(body.messages.map((m) => m.id)).toEqual(['u1', again.aid])
      // The next send follows the regenerated reply.
      const next = await send({
        user_id: user,
        conversation_id: cid,
        messages: [textMessage('thanks', 'u9')],
      })
      expect(next.reply).toBe(replyTo('first question', again.reply, 'thanks'))
    })

    test('the regenerated root message may name client-created-root as its parent', async () => {
      const user = newUser()
      const { cid } = await twoTurns(user)
      const again = await send({
        user_id: user,
        conversation_id: cid,
        action: 'variant',
        parent_message_id: ROOT,
        messages: [textMessage('first question', 'u1')],
      })
      expect(again.metadata.message_type).toBe('variant')
    })
  })

  describe('bad placements are clear errors and change nothing', () => {
    /** Everything a refused send must leave as it was. */
    async function snapshot(user: string, cid: string) {
      const rows = await t.db.query(
        'SELECT id, parent_id, status FROM messages WHERE conversation_id = $1 ORDER BY seq',
        [cid],
      )
      const conversations = await t.db.query(
        'SELECT id, current_node, title FROM conversations WHERE user_id = $1 ORDER BY id',
        [user],
      )
      return {
        rows,
        conversations,
        history: await t.cache.get(historyKey(cid)),
        context: await t.cache.listAll(contextKey(cid)),
      }
    }

    async function expectRefused(
      user: string,
      cid: string,
      body: Record<string, unknown>,
      status: number,
      detail: RegExp,
    ) {
      await detail_(user, cid) // cached, so a wrongly dropped key would show
      const before = await snapshot(user, cid)
      const response = await post(t.app, SEND, { user_id: user, ...body })
      expect(response.status).toBe(status)
      const error = (await response.json()) as { detail: string; code: string }
      expect(Object.keys(error).sort()).toEqual(['code', 'detail'])
      expect(error.detail).toMatch(detail)
      await t.conversations.whenIdle()
      expect(await snapshot(user, cid)).toEqual(before)
    }
    const detail_ = detail

    let user: string
    let cid: string
    let a1: string
    beforeAll(async () => {
      user = newUser()
      const turns = await twoTurns(user)
      cid = turns.cid
      a1 = turns.a1.aid
    })
    const next = (extra: Record<string, unknown>) => ({
      conversation_id: cid,
      messages: [textMessage('new text', `n-${randomUUID()}`)],
      ...extra,
    })

    test('an unknown parent_message_id is 404', () =>
      expectRefused(user, cid, next({ parent_message_id: 'nope' }), 404, /"nope"/))

    test("another conversation's message as parent is 404", async () => {
      const other = await send({ user_id: user, messages: [textMessage('elsewhere', 'x1')] })
      await expectRefused(user, cid, next({ parent_message_id: 'x1' }), 404, /"x1"/)
      expect(other.cid).not.toBe(cid)
    })

    test('an action other than next or variant is 422', async () => {
      await expectRefused(
        user,
        cid,
        next({ action: 'continue' }),
        422,
        /"action".*"next", "variant"/,
      )
      await expectRefused(user, cid, next({ action: 7 }), 422, /"action"/)
      await expectRefused(user, cid, next({ action: null }), 422, /"action"/)
    })

    test('a parent_message_id that is empty, too long or not a string is 422', async () => {
      await expectRefused(user, cid, next({ parent_message_id: '' }), 422, /parent_message_id/)
      await expectRefused(
        user,
        cid,
        next({ parent_message_id: 'p'.repeat(129) }),
        422,
        /parent_message_id/,
      )
      await expectRefused(
        user,
        cid,
        next({ parent_message_id: { id: a1 } }),
        422,
        /parent_message_id/,
      )
    })

    test('a variant naming a reply, not a user message, is 422', () =>
      expectRefused(
        user,
        cid,
        { conversation_id: cid, action: 'variant', messages: [textMessage('x', a1)] },
        422,
        /user message/,
      ))

    test('a variant naming a message that is not stored is 404', () =>
      expectRefused(
        user,
        cid,
        { conversation_id: cid, action: 'variant', messages: [textMessage('x', 'never-sent')] },
        404,
        /"never-sent"/,
      ))

    test('a variant with a parent that is not its message’s parent is 422', async () => {
      await expectRefused(
        user,
        cid,
        {
          conversation_id: cid,
          action: 'variant',
          parent_message_id: ROOT,
          messages: [textMessage('second question', 'u2')],
        },
        422,
        /parent_message_id/,
      )
      await expectRefused(
        user,
        cid,
        {
          conversation_id: cid,
          action: 'variant',
          parent_message_id: 'u2',
          messages: [textMessage('second question', 'u2')],
        },
        422,
        /parent_message_id/,
      )
    })

    test('a variant without an id, or with more than one message, is 422', async () => {
      await expectRefused(
        user,
        cid,
        { conversation_id: cid, action: 'variant', messages: [textMessage('second question')] },
        422,
        /messages\[0\]\.id/,
      )
      await expectRefused(
        user,
        cid,
        {
          conversation_id: cid,
          action: 'variant',
          messages: [textMessage('a', 'u1'), textMessage('b', 'u2')],
        },
        422,
        /exactly one/,
      )
    })

    test('a variant in a new conversation is 404', () =>
      expectRefused(
        user,
        cid,
        { action: 'variant', messages: [textMessage('x', 'u1')] },
        404,
        /"u1"/,
      ))

    test("a variant in someone else's conversation is 404", async () => {
      const stranger = newUser()
      const before = await snapshot(user, cid)
      const response = await post(t.app, SEND, {
        user_id: stranger,
        conversation_id: cid,
        action: 'variant',
        messages: [textMessage('second question', 'u2')],
      })
      expect(response.status).toBe(404)
      expect(await snapshot(user, cid)).toEqual(before)
    })

    test('next with a stored id is still 409; the same id as a variant is not', async () => {
      await expectRefused(
        user,
        cid,
        { conversation_id: cid, messages: [textMessage('again', 'u2')] },
        409,
        /"u2"/,
      )
    })
  })

  describe('the mapping while a reply streams and after it failed', () => {
    test('a reply in progress is in the mapping as in_progress and is the current node', async () => {
      const model = gatedModel({ slug: 'held', before: ['first '], after: ['second'] })
      const held = await conversationApp({ backend, model })
      const user = newUser()
      const response = await post(held.app, SEND, {
        user_id: user,
        messages: [textMessage('wait for it', 'w1')],
      })
      const reply = sseReader(response)
      const frames = await reply.until((f) => replyOf(f) === 'first ', 'the first chunk')
      const cid = conversationIdOf(frames)
      const read = async () =>
        (await (
          await get(held.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
        ).json()) as Detail
      const during = await read()
      const aid = during.current_node
      expect(during.mapping[aid]?.message?.status).toBe('in_progress')
      expect(during.mapping[aid]?.parent).toBe('w1')
      model.release()
      await reply.rest()
      await held.conversations.whenIdle()
      expect((await read()).mapping[aid]?.message).toMatchObject({
        status: 'finished_successfully',
        content: { parts: ['first second'] },
      })
    })

    test('the current node moves when a send is accepted: a send queued behind a running turn follows its reply', async () => {
      const model = gatedModel({ slug: 'held', before: ['waiting '], after: ['done'] })
      const held = await conversationApp({ backend, model })
      const user = newUser()
      const a = await post(held.app, SEND, { user_id: user, messages: [textMessage('A', 'qa')] })
      const aReader = sseReader(a)
      const aFrames = await aReader.until((f) => replyOf(f) === 'waiting ', 'the first chunk of A')
      const cid = conversationIdOf(aFrames)
      const aid = dataOf<{ v: { message: { id: string } } }>(aFrames[3]).v.message.id
      // B is accepted (its first items are in its log) while A still runs.
      const b = await post(held.app, SEND, {
        user_id: user,
        conversation_id: cid,
        messages: [textMessage('B', 'qb')],
      })
      const bReader = sseReader(b)
      const bFrames = await bReader.until((f) => f.length >= 4, 'the add item of B')
      const bid = dataOf<{ v: { message: { id: string } } }>(bFrames[3]).v.message.id
      const [conversation] = await held.db.query<{ current_node: string }>(
        'SELECT current_node FROM conversations WHERE id = $1',
        [cid],
      )
      expect(conversation?.current_node).toBe(bid)
      const [queued] = await held.db.query<{ parent_id: string }>(
        "SELECT parent_id FROM messages WHERE conversation_id = $1 AND id = 'qb'",
        [cid],
      )
      expect(queued?.parent_id).toBe(aid)
      model.release()
      await aReader.rest()
      await bReader.rest()
      await held.conversations.whenIdle()
      const body = (await (
        await get(held.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
      ).json()) as Detail
      expect(body.messages.map((m) => m.id)).toEqual(['qa', aid, 'qb', bid])
    })

    test('a failed reply is finished_partial_completion with its partial text', async () => {
      const failing = await conversationApp({
        backend,
        model: {
          slug: 'failing',
          async *stream() {
            yield 'partial '
            throw new ModelError('The model broke.')
          },
        },
      })
      const user = newUser()
      const { frames } = await sendAndRead(failing.app, {
        user_id: user,
        messages: [textMessage('try', 'f1')],
      })
      const cid = conversationIdOf(frames)
      await failing.conversations.whenIdle()
      const body = (await (
        await get(failing.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
      ).json()) as Detail
      expect(body.mapping[body.current_node]?.message).toMatchObject({
        status: 'finished_partial_completion',
        content: { parts: ['partial '] },
        metadata: { finish_details: { type: 'error' } },
      })
    })
  })
})
