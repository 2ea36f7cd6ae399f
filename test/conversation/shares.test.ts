// Shared links over HTTP (CONTRACT §23), on every backend: the owner makes a
// link to a branch, retitles it, makes it private, deletes it; anyone reads
// the branch without an identity, as JSON in the detail shape (with no user
// id in it) and as an HTML page whose text is escaped. Messages added later
// are not shared, a deleted conversation's links are gone, someone else's
// link or conversation answers like a missing one, and refused input stores
// and changes nothing.
import { describe, expect, test } from 'bun:test'
import { MAX_BODY_BYTES } from '../../src/http/body-limit.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  dataOf,
  get,
  newUser,
  post,
  sendAndRead,
  textMessage,
} from '../support/conversation-app.ts'

interface ShareInfo {
  share_id: string
  share_url: string
  title: string
  is_public: boolean
  already_exists?: boolean
  current_node_id: string
  moderation_state: Record<string, boolean>
}
interface Shared {
  id: string
  conversation_id: string
  share_id: string
  title: string
  current_node: string
  messages: { id: string; role: string; content: { parts: string[] }; parent_id: string | null }[]
  mapping: Record<string, { parent: string | null; children: string[] }>
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

describeEachBackend({}, (t) => {
  const asUser = (user: string) => ({ 'x-user-id': user })
  const call = (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) =>
    t.app.handle(
      new Request(`http://localhost${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...headers },
        ...(body === undefined
          ? {}
          : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      }),
    )
  const create = (user: string, body: unknown) =>
    post(t.app, '/backend-api/share/create', body, asUser(user))
  const readShared = (id: string) => get(t.app, `/backend-api/share/${id}`)
  const sharesOf = async (cid: string) =>
    (
      await t.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM shares WHERE conversation_id = $1',
        [cid],
      )
    )[0]?.n

  /** A turn in a new conversation (or `cid`); the ids of its user message and reply. */
  async function turn(user: string, text: string, cid?: string) {
    const sent = await sendAndRead(t.app, {
      user_id: user,
      ...(cid ? { conversation_id: cid } : {}),
      messages: [textMessage(text)],
    })
    await t.conversations.whenIdle()
    const conversationId = dataOf<{ conversation_id: string }>(sent.frames[1]).conversation_id
    const replyId = dataOf<{ v: { message: { id: string } } }>(sent.frames[3]).v.message.id
    const detail = (await (
      await get(t.app, `/backend-api/conversation/${conversationId}`, asUser(user))
    ).json()) as Shared
    const reply = detail.messages.find((message) => message.id === replyId)
    return { cid: conversationId, replyId, userMessageId: reply?.parent_id as string }
  }

  async function share(user: string, cid: string, node: string): Promise<ShareInfo> {
    const response = await create(user, { conversation_id: cid, current_node_id: node })
    expect(response.status).toBe(200)
    return (await response.json()) as ShareInfo
  }

  describe('making and reading a link', () => {
    test('anyone reads the branch up to the shared message, with no user id, and later messages are not shared', async () => {
      const user = newUser()
      const first = await turn(user, 'the first question')
      const info = await share(user, first.cid, first.replyId)
      expect(info.share_id).toMatch(UUID)
      expect(info.share_url).toBe(`http://localhost/share/${info.share_id}`)
      expect(info).toMatchObject({
        is_public: true,
        already_exists: false,
        current_node_id: first.replyId,
        title: 'the first question',
      })
      expect(info.moderation_state.has_been_blocked).toBe(false)

      await turn(user, 'a later question', first.cid)
      const response = await readShared(info.share_id)
      expect(response.status).toBe(200)
      const text = await response.text()
      expect(text).not.toContain(user)
      const shared = JSON.parse(text) as Shared
      expect(shared.id).toBe(info.share_id)
      expect(shared.conversation_id).toBe(info.share_id)
      expect(shared.current_node).toBe(first.replyId)
      expect(shared.messages.map((message) => message.id)).toEqual([
        first.userMessageId,
        first.replyId,
      ])
      expect(Object.keys(shared.mapping)).toEqual([
        'client-created-root',
        first.userMessageId,
        first.replyId,
      ])
      expect(shared.mapping[first.replyId]?.children).toEqual([])
      expect(text).not.toContain('a later question')

      // The same message again: the same link.
      const again = await share(user, first.cid, first.replyId)
      expect(again).toMatchObject({ share_id: info.share_id, already_exists: true })
      expect(await sharesOf(first.cid)).toBe(1)
    })

    test('a message higher up shares only the branch above it', async () => {
      const user = newUser()
      const first = await turn(user, 'one')
      await turn(user, 'two', first.cid)
      const info = await share(user, first.cid, first.userMessageId)
      const shared = (await (await readShared(info.share_id)).json()) as Shared
      expect(shared.messages.map((message) => message.id)).toEqual([first.userMessageId])
    })

    test('bad input, a missing message, or someone else’s conversation: refused, and nothing stored', async () => {
      const user = newUser()
      const { cid, replyId } = await turn(user, 'mine')
      const cases: [string, Record<string, string>, unknown, number][] = [
        ['not a UUID', asUser(user), { conversation_id: 'abc', current_node_id: replyId }, 422],
        ['no node', asUser(user), { conversation_id: cid }, 422],
        ['empty node', asUser(user), { conversation_id: cid, current_node_id: '' }, 422],
        [
          'long node',
          asUser(user),
          { conversation_id: cid, current_node_id: 'x'.repeat(129) },
          422,
        ],
        ['node not a string', asUser(user), { conversation_id: cid, current_node_id: 7 }, 422],
        ['not JSON', asUser(user), '{"conversation_id":', 422],
        ['an array', asUser(user), [cid], 422],
        [
          'unknown node',
          asUser(user),
          { conversation_id: cid, current_node_id: 'no-such-id' },
          404,
        ],
        [
          'unknown conversation',
          asUser(user),
          { conversation_id: crypto.randomUUID(), current_node_id: replyId },
          404,
        ],
        [
          "another's conversation",
          asUser(newUser()),
          { conversation_id: cid, current_node_id: replyId },
          404,
        ],
        ['nobody', {}, { conversation_id: cid, current_node_id: replyId }, 401],
      ]
      for (const [name, headers, body, status] of cases) {
        const response = await post(t.app, '/backend-api/share/create', body, headers)
        expect({ name, status: response.status }).toEqual({ name, status })
        const error = (await response.json()) as { detail: string; code: string }
        expect(typeof error.detail).toBe('string')
        expect(typeof error.code).toBe('string')
      }
      expect(await sharesOf(cid)).toBe(0)
    })

    test('a reply still being written is not shared yet (409), and nothing is stored', async () => {
      const user = newUser()
      const { cid, replyId } = await turn(user, 'streaming')
      // As a reply stands while it streams (a running turn is not held still in a test).
      await t.db.query("UPDATE messages SET status = 'in_progress' WHERE id = $1", [replyId])
      const response = await create(user, { conversation_id: cid, current_node_id: replyId })
      expect(response.status).toBe(409)
      expect(((await response.json()) as { code: string }).code).toBe('conflict')
      expect(await sharesOf(cid)).toBe(0)
    })

    test('an unknown or malformed link: 404 as JSON, 404 as a page', async () => {
      expect((await readShared(crypto.randomUUID())).status).toBe(404)
      expect((await readShared('not-a-uuid')).status).toBe(422)
      const page = await get(t.app, '/share/not-a-uuid')
      expect(page.status).toBe(404)
      expect(page.headers.get('content-type')).toStartWith('text/html')
      expect((await get(t.app, `/share/${crypto.randomUUID()}`)).status).toBe(404)
    })
  })

  describe('the owner changes a link', () => {
    test('retitle, private and public again; someone else gets 404 and changes nothing', async () => {
      const user = newUser()
      const { cid, replyId } = await turn(user, 'to share')
      const info = await share(user, cid, replyId)
      const path = `/backend-api/share/${info.share_id}`
      const stranger = await call(
        'PATCH',
        path,
        { title: 'hijacked', is_public: false },
        asUser(newUser()),
      )
      expect(stranger.status).toBe(404)
      expect((await stranger.json()) as object).toEqual({
        detail: expect.any(String),
        code: 'not_found',
      })

      const renamed = await call('PATCH', path, { title: 'A better title' }, asUser(user))
      expect(renamed.status).toBe(200)
      expect(((await renamed.json()) as ShareInfo).title).toBe('A better title')
      expect(((await (await readShared(info.share_id)).json()) as Shared).title).toBe(
        'A better title',
      )

      expect((await call('PATCH', path, { is_public: false }, asUser(user))).status).toBe(200)
      expect((await readShared(info.share_id)).status).toBe(404)
      expect((await get(t.app, `/share/${info.share_id}`)).status).toBe(404)
      expect((await call('PATCH', path, { is_public: true }, asUser(user))).status).toBe(200)
      expect((await readShared(info.share_id)).status).toBe(200)
    })

    test('bad, oversized or hostile PATCH bodies are refused and change nothing', async () => {
      const user = newUser()
      const { cid, replyId } = await turn(user, 'unchanged title')
      const info = await share(user, cid, replyId)
      const path = `/backend-api/share/${info.share_id}`
      const cases: [string, string, unknown, number][] = [
        ['nothing to change', path, {}, 422],
        ['only unknown fields', path, { is_anonymous: false, share_id: crypto.randomUUID() }, 422],
        ['title too long', path, { title: 'x'.repeat(257) }, 422],
        ['title empty', path, { title: '' }, 422],
        ['title on two lines', path, { title: 'a\nb' }, 422],
        ['title with NUL', path, { title: 'a\u0000b' }, 422],
        ['is_public a string', path, { is_public: 'false' }, 422],
        ['not JSON', path, '{"title":', 422],
        ['oversized', path, { title: 'x'.repeat(MAX_BODY_BYTES) }, 413],
        ['share id not a UUID', '/backend-api/share/1%27%20OR%201=1', { title: 'x' }, 422],
        ['unknown share', `/backend-api/share/${crypto.randomUUID()}`, { title: 'x' }, 404],
      ]
      for (const [name, target, body, status] of cases) {
        const response = await call('PATCH', target, body, asUser(user))
        expect({ name, status: response.status }).toEqual({ name, status })
      }
      const rows = await t.db.query<{ title: string; is_public: boolean }>(
        'SELECT title, is_public FROM shares WHERE id = $1',
        [info.share_id],
      )
      expect(rows).toEqual([{ title: 'unchanged title', is_public: true }])
    })

    test('delete: by its owner only; the link is then gone', async () => {
      const user = newUser()
      const { cid, replyId } = await turn(user, 'short-lived')
      const info = await share(user, cid, replyId)
      const path = `/backend-api/share/${info.share_id}`
      expect((await call('DELETE', path, undefined, asUser(newUser()))).status).toBe(404)
      expect((await readShared(info.share_id)).status).toBe(200)
      const deleted = await call('DELETE', path, undefined, asUser(user))
      expect(deleted.status).toBe(200)
      expect(await deleted.json()).toEqual({ success: true })
      expect((await readShared(info.share_id)).status).toBe(404)
      expect((await call('DELETE', path, undefined, asUser(user))).status).toBe(404)
      expect(
        (await call('DELETE', '/backend-api/share/nope', undefined, asUser(user))).status,
      ).toBe(422)
      // The conversation itself is untouched.
      expect((await get(t.app, `/backend-api/conversation/${cid}`, asUser(user))).status).toBe(200)
    })

    test("a deleted conversation's links answer 404", async () => {
      const user = newUser()
      const { cid, replyId, userMessageId } = await turn(user, 'soon deleted')
      const one = await share(user, cid, replyId)
      const two = await share(user, cid, userMessageId)
      const removed = await call(
        'PATCH',
        `/backend-api/conversation/${cid}`,
        { is_visible: false },
        asUser(user),
      )
      expect(removed.status).toBe(200)
      for (const id of [one.share_id, two.share_id]) {
        expect((await readShared(id)).status).toBe(404)
        expect((await get(t.app, `/share/${id}`)).status).toBe(404)
      }
      expect(await sharesOf(cid)).toBe(0)
    })
  })

  describe('an imported conversation', () => {
    test('its hidden instructions are not shared, and the shown messages still form one branch', async () => {
      const user = newUser()
      const message = (id: string, role: string, content: object, metadata = {}) => ({
        id,
        author: { role },
        content,
        metadata,
        create_time: 1_764_000_000,
      })
      const file = [
        {
          id: 'shared-import-1',
          title: 'With instructions',
          create_time: 1_764_000_000,
          update_time: 1_764_000_001,
          current_node: 'q',
          mapping: {
            root: { id: 'root', message: null, parent: null, children: ['ctx'] },
            ctx: {
              id: 'ctx',
              parent: 'root',
              children: ['q'],
              message: message(
                'ctx',
                'user',
                { content_type: 'user_editable_context', user_profile: 'I fly kites secretly.' },
                {
                  is_visually_hidden_from_conversation: true,
                  user_context_message_data: { about_user_message: 'I fly kites secretly.' },
                },
              ),
            },
            q: {
              id: 'q',
              parent: 'ctx',
              children: [],
              message: message('q', 'user', { content_type: 'text', parts: ['hello there'] }),
            },
          },
        },
      ]
      const response = await post(t.app, '/backend-api/conversations/import', file, asUser(user))
      expect(response.status).toBe(200)
      expect(((await response.json()) as { imported: number }).imported).toBe(1)
      const list = (await (
        await get(t.app, '/backend-api/conversations', asUser(user))
      ).json()) as {
        items: { id: string }[]
      }
      const cid = list.items[0]?.id as string
      const detail = (await (
        await get(t.app, `/backend-api/conversation/${cid}`, asUser(user))
      ).json()) as Shared
      expect(JSON.stringify(detail)).toContain('I fly kites secretly.')
      const last = detail.current_node
      const info = await share(user, cid, last)
      const text = await (await readShared(info.share_id)).text()
      expect(text).not.toContain('kites')
      const shared = JSON.parse(text) as Shared
      expect(shared.messages.map((m) => m.content.parts)).toEqual([['hello there']])
      expect(shared.messages[0]?.parent_id).toBeNull()
      expect(shared.mapping[last]?.parent).toBe('client-created-root')
      expect(shared.mapping['client-created-root']?.children).toEqual([last])
      expect(await (await get(t.app, `/share/${info.share_id}`)).text()).not.toContain('kites')
    })
  })

  describe('the page', () => {
    test('shows the branch read-only, every text escaped, under a policy that runs no script', async () => {
      const user = newUser()
      const hostile = '<img src=x onerror=alert(document.cookie)> & "quotes" \'too\''
      const { cid, replyId } = await turn(user, hostile)
      const info = await share(user, cid, replyId)
      const titled = await call(
        'PATCH',
        `/backend-api/share/${info.share_id}`,
        { title: '</title><script>alert(1)</script>' },
        asUser(user),
      )
      expect(titled.status).toBe(200)
      const page = await get(t.app, `/share/${info.share_id}`)
      expect(page.status).toBe(200)
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'")
      expect(page.headers.get('content-security-policy')).not.toContain('script-src')
      const html = await page.text()
      expect(html).toContain(
        '&lt;img src=x onerror=alert(document.cookie)&gt; &amp; &quot;quotes&quot; &#39;too&#39;',
      )
      expect(html).toContain('&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;')
      expect(html).not.toContain('<img')
      expect(html).not.toContain('<script')
      expect(html).not.toContain(user)
      // The reply is on the page too (the local model echoes the question).
      const shared = (await (await readShared(info.share_id)).json()) as Shared
      expect(shared.messages).toHaveLength(2)
      expect(html.match(/<article class="message">/g)).toHaveLength(2)
    })
  })
})
