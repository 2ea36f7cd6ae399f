// Export and import (CONTRACT §17): a user's conversations out as chatgpt.com's
// conversations.json and into another user as the same conversations; a
// chatgpt.com export with branches, hidden system and tool nodes and an image
// part; a data export zip; importing twice; the archive filter and the
// download headers. On every backend.
import { beforeAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { Value } from '@sinclair/typebox/value'
import { strToU8, Zip, ZipDeflate, zipSync } from 'fflate'
import { instructionsText } from '../../src/conversation/instructions/instructions.ts'
import { contextKey, listKey } from '../../src/conversation/reads/cache-keys.ts'
import { ConversationDetail } from '../../src/conversation/tree/detail-schema.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationIdOf,
  dataOf,
  get,
  newUser,
  post,
  sendAndRead,
  type TestApp,
  textMessage,
} from '../support/conversation-app.ts'
import {
  CHATGPT_EXPORT,
  CHATGPT_IDS,
  chatgptConversation,
  type Detail,
  detailOf,
  EXPORT,
  exported,
  imported,
  importFile,
  listedIds,
  withId,
} from '../support/transfer.ts'

const SEND = '/backend-api/f/conversation'

function patch(app: TestApp['app'], path: string, user: string, body: unknown) {
  return app.handle(
    new Request(`http://localhost${path}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', 'x-user-id': user },
      body: JSON.stringify(body),
    }),
  )
}

/** The reply id of a send's stream (its add item). */
const replyIdOf = (frames: Parameters<typeof conversationIdOf>[0]) => {
  const add = frames.find((frame) => frame.data.includes('"o":"add"'))
  return dataOf<{ v: { message: { id: string } } }>(add).v.message.id
}

/** Every mapping message's create_time is later than its parent message's. */
function expectTimesIncrease(detail: Detail) {
  for (const node of Object.values(detail.mapping)) {
    const parent = node.parent === null ? undefined : detail.mapping[node.parent]?.message
    if (node.message && parent)
      expect({ id: node.id, later: node.message.create_time > parent.create_time }).toEqual({
        id: node.id,
        later: true,
      })
  }
}

/**
 * What the importers of chatgpt.com exports read (LibreChat's
 * importChatGptConvo, convoviz's models, Open WebUI's converter): top-level
 * id, title, float times, current_node and mapping; the root first; the last
 * node a leaf; every message with author.role, content.content_type,
 * metadata and weight.
 */
function expectReadableExport(entry: Detail) {
  expect(Value.Errors(ConversationDetail, entry).First()).toBeUndefined()
  expect(entry.id).toBe(entry.conversation_id)
  expect(typeof entry.title).toBe('string')
  expect(Number.isFinite(entry.create_time) && Number.isFinite(entry.update_time)).toBe(true)
  expect(entry.mapping[entry.current_node]).toBeDefined()
  const nodes = Object.values(entry.mapping)
  expect(nodes[0]).toMatchObject({ parent: null, message: null })
  expect(nodes.at(-1)?.children).toEqual([])
  for (const node of nodes.slice(1)) {
    expect(node.message?.author.role).toBeString()
    expect(node.message?.content.content_type).toBeString()
    expect(node.message?.weight).toBeNumber()
    expect(node.message?.metadata).toBeObject()
  }
  expectTimesIncrease(entry)
}

describeEachBackend({}, (t) => {
  async function send(body: Record<string, unknown>) {
    const { response, frames } = await sendAndRead(t.app, body)
    expect(response.status).toBe(200)
    await t.conversations.whenIdle()
    return { cid: conversationIdOf(frames), aid: replyIdOf(frames) }
  }

  /** Two conversations of `user`: one with an edit and a regenerated reply, renamed; one archived. */
  async function history(user: string) {
    const first = await send({ user_id: user, messages: [textMessage('plan a trip', 'p1')] })
    const second = await send({
      user_id: user,
      conversation_id: first.cid,
      messages: [textMessage('somewhere warm', 'p2')],
    })
    await send({
      user_id: user,
      conversation_id: first.cid,
      parent_message_id: first.aid,
      messages: [textMessage('somewhere cold', 'p2e')],
    })
    await send({
      user_id: user,
      conversation_id: first.cid,
      action: 'variant',
      messages: [textMessage('somewhere cold', 'p2e')],
    })
    expect(
      (await patch(t.app, `/backend-api/conversation/${first.cid}`, user, { title: 'Trips' }))
        .status,
    ).toBe(200)
    const other = await send({ user_id: user, messages: [textMessage('archive me', 'z1')] })
    await patch(t.app, `/backend-api/conversation/${other.cid}`, user, { is_archived: true })
    return { trips: first.cid, archived: other.cid, unused: second.aid }
  }

  describe('export', () => {
    test('is every conversation of the user as its detail, oldest first, as an attachment', async () => {
      const user = newUser()
      const { trips, archived } = await history(user)
      const response = await get(t.app, EXPORT, { 'x-user-id': user })
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toStartWith('application/json')
      expect(response.headers.get('content-disposition')).toBe(
        'attachment; filename="conversations.json"',
      )
      const entries = (await response.json()) as Detail[]
      expect(entries.map((entry) => entry.id)).toEqual([trips, archived])
      expect(entries).toEqual([
        await detailOf(t.app, user, trips),
        await detailOf(t.app, user, archived),
      ])
      for (const entry of entries) expectReadableExport(entry)
      expect(entries[0]).toMatchObject({ title: 'Trips', is_archived: false })
      expect(entries[1]).toMatchObject({ is_archived: true })
      // The edit and the regenerated reply are in the tree.
      expect(entries[0]?.mapping.p2e?.children).toHaveLength(2)
    })

    test('?archived picks one kind; an empty history is []; a bad value is 422', async () => {
      const user = newUser()
      const { trips, archived } = await history(user)
      expect((await exported(t.app, user, '?archived=true')).map((entry) => entry.id)).toEqual([
        archived,
      ])
      expect((await exported(t.app, user, '?archived=false')).map((entry) => entry.id)).toEqual([
        trips,
      ])
      expect(await exported(t.app, newUser())).toEqual([])
      const bad = await get(t.app, `${EXPORT}?archived=maybe`, { 'x-user-id': user })
      expect(bad.status).toBe(422)
      expect(((await bad.json()) as { detail: string }).detail).toContain('archived')
      expect((await get(t.app, EXPORT)).status).toBe(401)
    })
  })

  describe('round trip', () => {
    test('export, then import into another user: the same details under new ids', async () => {
      const owner = newUser()
      await history(owner)
      const file = await (await get(t.app, EXPORT, { 'x-user-id': owner })).text()
      const originals = JSON.parse(file) as Detail[]

      const reader = newUser()
      await listedIds(t.app, reader) // cached now: the import must invalidate it
      expect(await imported(t.app, reader, file)).toEqual({ imported: 2, skipped: [] })
      const ids = [...(await listedIds(t.app, reader)), ...(await listedIds(t.app, reader, true))]
      expect(ids).toHaveLength(2)
      const copies = await exported(t.app, reader)
      // The ids were the owner's, so the copies have new ones; all else is the same.
      for (const [index, copy] of copies.entries()) {
        const original = originals[index] as Detail
        expect(copy.id).not.toBe(original.id)
        expect(ids).toContain(copy.id)
        expect(copy).toEqual(withId(original, copy.id))
      }
      // The owner's conversations are untouched.
      expect(await exported(t.app, owner)).toEqual(originals)
    })

    test('ids are kept when they are free: a deleted history comes back as it was', async () => {
      const user = newUser()
      await history(user)
      const file = await (await get(t.app, EXPORT, { 'x-user-id': user })).text()
      const originals = JSON.parse(file) as Detail[]
      expect(
        (await patch(t.app, '/backend-api/conversations', user, { is_visible: false })).status,
      ).toBe(200)
      expect(await exported(t.app, user)).toEqual([])

      expect(await imported(t.app, user, file)).toEqual({ imported: 2, skipped: [] })
      expect(await exported(t.app, user)).toEqual(originals)
      for (const original of originals)
        expect(await detailOf(t.app, user, original.id)).toEqual(original)
    })

    test('importing the same file again stores nothing new', async () => {
      const owner = newUser()
      await history(owner)
      const file = await (await get(t.app, EXPORT, { 'x-user-id': owner })).text()
      const ids = (JSON.parse(file) as Detail[]).map((entry) => entry.id)
      const reader = newUser()
      await imported(t.app, reader, file)
      const count = async () =>
        (
          await t.db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM messages m JOIN conversations c ON c.id = m.conversation_id
                WHERE c.user_id = $1`,
            [reader],
          )
        )[0]?.n
      const before = await count()
      const again = await imported(t.app, reader, file)
      expect(again).toEqual({
        imported: 0,
        skipped: ids.map((id, index) => ({ id, index, reason: 'already imported' })),
      })
      expect(await count()).toBe(before)
      // The owner importing their own export: their conversations are already there.
      expect(await imported(t.app, owner, file)).toEqual({
        imported: 0,
        skipped: ids.map((id, index) => ({ id, index, reason: 'already exists' })),
      })
    })

    test('an imported conversation goes on from its current node', async () => {
      const owner = newUser()
      const { trips } = await history(owner)
      const reader = newUser()
      await imported(t.app, reader, await (await get(t.app, EXPORT, { 'x-user-id': owner })).text())
      const [copy] = await exported(t.app, reader)
      const before = await detailOf(t.app, owner, trips)
      const next = await send({
        user_id: reader,
        conversation_id: copy?.id,
        messages: [textMessage('and then?', 'p3')],
      })
      const after = await detailOf(t.app, reader, next.cid)
      expect(after.messages.map((m) => m.id)).toEqual([
        ...before.messages.map((m) => m.id),
        'p3',
        next.aid,
      ])
    })
  })

  describe('a chatgpt.com export', () => {
    let user: string
    let report: Awaited<ReturnType<typeof imported>>
    beforeAll(async () => {
      user = newUser()
      await listedIds(t.app, user)
      report = await imported(t.app, user, CHATGPT_EXPORT)
    })

    test('is imported with a report of what was left out', () => {
      expect(report).toEqual({
        imported: 2,
        skipped: [
          {
            id: CHATGPT_IDS.eggs,
            index: 1,
            message_id: 'x-1',
            reason: 'left out: its author role "critic" is not one this service keeps',
          },
          { id: CHATGPT_IDS.empty, index: 2, reason: 'it has no message this service can keep' },
        ],
      })
    })

    test('keeps the whole tree: branches, hidden nodes, current node, times, title, models', async () => {
      const detail = await detailOf(t.app, user, CHATGPT_IDS.lisbon)
      expectReadableExport(detail)
      expect(detail).toMatchObject({
        id: CHATGPT_IDS.lisbon,
        title: 'Weekend in Lisbon',
        create_time: 1714000000.125,
        update_time: 1714000420.5,
        current_node: 'a-2b',
        // The export's own default_model_slug, not its newest reply's model (gpt-4o-mini).
        default_model_slug: 'gpt-4o',
        is_archived: false,
      })
      // The file's order, which is creation order, under this service's root.
      expect(Object.keys(detail.mapping)).toEqual([
        'client-created-root',
        'sys-1',
        'ctx-1',
        'u-1',
        'a-1',
        'u-2',
        'a-2-call',
        't-1',
        'a-2',
        'u-2b',
        'a-2b',
      ])
      expect(detail.mapping['a-1']?.children).toEqual(['u-2', 'u-2b'])
      expect(detail.messages.map((m) => m.id)).toEqual([
        'sys-1',
        'ctx-1',
        'u-1',
        'a-1',
        'u-2b',
        'a-2b',
      ])
      const { mapping } = detail
      // The image message as chatgpt.com keeps it (CONTRACT §20): its pointer and its text.
      expect(mapping['u-1']?.message?.content).toEqual({
        content_type: 'multimodal_text',
        parts: [
          {
            content_type: 'image_asset_pointer',
            asset_pointer: 'file-service://file-7aKq',
            size_bytes: 48211,
            width: 640,
            height: 480,
            metadata: null,
          },
          'Where was this picture taken?',
        ],
      })
      // Hidden and tool nodes as the export had them.
      expect(mapping['sys-1']?.message).toMatchObject({
        author: { role: 'system' },
        weight: 0,
        end_turn: true,
        metadata: { is_visually_hidden_from_conversation: true },
        create_time: 1714000000.126,
      })
      expect(mapping['ctx-1']?.message?.metadata).toMatchObject({ is_user_system_message: true })
      expect(mapping['a-2-call']?.message).toMatchObject({
        recipient: 'browser',
        end_turn: false,
        content: { content_type: 'code', language: 'unknown', text: 'search("Lisbon weekend")' },
      })
      expect(mapping['t-1']?.message).toMatchObject({
        author: { role: 'tool', name: 'browser', metadata: {} },
        content: { content_type: 'tether_browsing_display' },
      })
      expect(mapping['a-2b']?.message).toMatchObject({
        create_time: 1714000405.75,
        update_time: 1714000420.5,
        metadata: { model_slug: 'gpt-4o-mini', finish_details: { type: 'stop' } },
      })
      // Only the public metadata is kept: the attachment list, no request ids.
      expect(mapping['u-1']?.message?.metadata).toEqual({
        attachments: [{ id: 'file-7aKq', name: 'tram.jpg', size: 48211 }],
      })
    })

    test('a malformed title, a reply still in progress and an unknown role are mended', async () => {
      const detail = await detailOf(t.app, user, CHATGPT_IDS.eggs)
      expect(detail.title).toBe('How do I boil an egg?')
      expect(detail.is_archived).toBe(true)
      expect(detail.mapping['r-1']?.message?.status).toBe('finished_partial_completion')
      // The left-out node's child hangs from its parent.
      expect(detail.mapping['q-2']?.parent).toBe('r-1')
      expect(detail.current_node).toBe('q-2')
      expect(detail.mapping['x-1']).toBeUndefined()
      expect(
        (
          await get(t.app, `/backend-api/conversation/${CHATGPT_IDS.empty}`, {
            'x-user-id': user,
          })
        ).status,
      ).toBe(404)
    })

    test('the list shows it; hidden nodes are never the last message nor in the context', async () => {
      expect(await listedIds(t.app, user)).toContain(CHATGPT_IDS.lisbon)
      const list = (await (
        await get(t.app, '/backend-api/conversations', { 'x-user-id': user })
      ).json()) as {
        items: { id: string; last_message: string }[]
      }
      expect(list.items.find((item) => item.id === CHATGPT_IDS.lisbon)?.last_message).toBe(
        'Walk, ride tram 28, eat pastéis.',
      )
      // Answering on the branch of the tool call: its call and result are not context.
      await t.cache.del(contextKey(CHATGPT_IDS.lisbon))
      const next = await send({
        user_id: user,
        conversation_id: CHATGPT_IDS.lisbon,
        parent_message_id: 'a-2',
        messages: [textMessage('thanks', 'thx')],
      })
      const context = (await t.cache.listAll(contextKey(CHATGPT_IDS.lisbon))).map(
        (entry) => (JSON.parse(entry) as { id: string }).id,
      )
      expect(context).toEqual(['u-1', 'a-1', 'u-2', 'a-2', 'thx', next.aid])
    })

    test("a send to it is held to the instructions it was imported with, not the user's current ones", async () => {
      // A user of their own: the other tests of this export read its conversations unchanged.
      const reader = newUser()
      await imported(t.app, reader, CHATGPT_EXPORT)
      // Under new ids: the export's are the first user's.
      const copies = await exported(t.app, reader)
      const lisbon = copies.find((copy) => copy.title === 'Weekend in Lisbon')
      const eggs = copies.find((copy) => copy !== lisbon)
      // The user's current instructions: enabled, and longer than the conversation's.
      const current = {
        enabled: true,
        about_user_message: 'I am a retired ship captain who sails the Atlantic every summer.',
        about_model_message: 'Answer like a sailor would.',
      }
      const stored = await post(t.app, '/backend-api/user_system_messages', current, {
        'x-user-id': reader,
      })
      expect(stored.status).toBe(200)
      const wordsFollowed = async (conversationId: string, parent: string) => {
        const next = await send({
          user_id: reader,
          conversation_id: conversationId,
          parent_message_id: parent,
          messages: [textMessage('one more thing', randomUUID())],
        })
        const detail = await detailOf(t.app, reader, conversationId)
        const text = detail.mapping[next.aid]?.message?.content.parts?.join('') ?? ''
        return /I am following my instructions \((\d+) words?\)/.exec(text)?.[1]
      }
      const wordCount = (text: string | undefined) =>
        String((text ?? '').split(/\s+/).filter((word) => word !== '').length)
      // Lisbon kept chatgpt.com's instructions node (I like trains. / Answer briefly.).
      expect(await wordsFollowed(lisbon?.id as string, 'a-2b')).toBe(
        wordCount(
          instructionsText({
            enabled: true,
            aboutUser: 'I like trains.',
            aboutModel: 'Answer briefly.',
            otherFields: {},
          }),
        ),
      )
      // The eggs conversation has none: the user's current instructions apply.
      expect(await wordsFollowed(eggs?.id as string, eggs?.current_node as string)).toBe(
        wordCount(
          instructionsText({
            enabled: true,
            aboutUser: current.about_user_message,
            aboutModel: current.about_model_message,
            otherFields: {},
          }),
        ),
      )
    })

    test('exporting it gives back what was imported', async () => {
      const entries = await exported(t.app, user)
      expect(entries.map((entry) => entry.id).sort()).toEqual(
        [CHATGPT_IDS.lisbon, CHATGPT_IDS.eggs].sort(),
      )
      for (const entry of entries) expect(entry).toEqual(await detailOf(t.app, user, entry.id))
    })
  })

  describe('a data export zip', () => {
    test('its conversations.json is imported; the other files are not read', async () => {
      const zip = zipSync({
        'conversations.json': new Uint8Array(CHATGPT_EXPORT),
        'chat.html': strToU8('<html>the same, for people</html>'),
        'file-7aKq-tram.jpg': new Uint8Array(4096).fill(7),
        'user.json': strToU8('{"id":"user-abc"}'),
      })
      const user = newUser()
      const response = await importFile(t.app, user, zip, { 'content-type': 'application/zip' })
      expect(response.status).toBe(200)
      expect(((await response.json()) as { imported: number }).imported).toBe(2)
      // Under new ids: another user imported this file first.
      const entries = await exported(t.app, user)
      expect(entries.map((entry) => [entry.title, entry.current_node])).toEqual([
        ['Weekend in Lisbon', 'a-2b'],
        ['How do I boil an egg?', 'q-2'],
      ])
    })

    test('written as a stream (sizes after the data), and sent in small chunks', async () => {
      const parts: Uint8Array[] = []
      const zip = new Zip((error, chunk) => {
        if (error) throw error
        parts.push(chunk)
      })
      const entry = new ZipDeflate('conversations.json', { level: 6 })
      zip.add(entry)
      entry.push(new Uint8Array(CHATGPT_EXPORT), true)
      zip.end()
      const bytes = Buffer.concat(parts)
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let at = 0; at < bytes.length; at += 300)
            controller.enqueue(bytes.subarray(at, at + 300))
          controller.close()
        },
      })
      const response = await importFile(t.app, newUser(), body, {
        'content-type': 'application/zip',
      })
      expect(response.status).toBe(200)
      expect(((await response.json()) as { imported: number }).imported).toBe(2)
    })

    test('in one top folder, stored uncompressed, or after other entries', async () => {
      const file = new Uint8Array(CHATGPT_EXPORT)
      for (const zip of [
        zipSync({ 'export-2024/conversations.json': file }),
        zipSync({ 'conversations.json': [file, { level: 0 }] }),
        zipSync({ 'a.txt': strToU8('a'), 'b/c.txt': strToU8('c'), 'conversations.json': file }),
      ]) {
        const user = newUser()
        const response = await importFile(t.app, user, zip, { 'content-type': 'application/zip' })
        expect(response.status).toBe(200)
        expect(((await response.json()) as { imported: number }).imported).toBe(2)
      }
    })
  })

  test('a hidden node is never the last message of the list', async () => {
    const user = newUser()
    const file = [
      chatgptConversation(randomUUID(), [
        { id: 'q', text: 'look it up' },
        { id: 'a', text: 'Here is what I found.' },
        { id: 'call', role: 'assistant', message: { recipient: 'browser' } },
        { id: 'result', role: 'tool', text: 'raw search results' },
      ]),
    ]
    expect((await imported(t.app, user, JSON.stringify(file))).imported).toBe(1)
    const list = (await (
      await get(t.app, '/backend-api/conversations', { 'x-user-id': user })
    ).json()) as {
      items: { last_message: string }[]
    }
    expect(list.items.map((item) => item.last_message)).toEqual(['Here is what I found.'])
  })

  test('the list cache is dropped by an import that stored something', async () => {
    const user = newUser()
    await listedIds(t.app, user)
    expect(await t.cache.get(listKey(user))).not.toBeNull()
    await imported(t.app, user, CHATGPT_EXPORT)
    expect(await t.cache.get(listKey(user))).toBeNull()
  })

  test('a send to an imported conversation, an export and an import need an identity', async () => {
    expect((await importFile(t.app, '', '[]', { 'x-user-id': '' })).status).toBe(401)
    expect((await post(t.app, SEND, { messages: [textMessage('x')] })).status).toBe(401)
  })
})
