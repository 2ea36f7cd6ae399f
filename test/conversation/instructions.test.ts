// Custom instructions (CONTRACT §16) over HTTP, on every app backend: GET
// answers chatgpt.com's user_system_message_detail (defaults off and empty),
// POST sets the fields it gives and keeps the rest, unknown fields are kept
// and returned, each user has their own, and bad input - malformed, oversized,
// hostile - is a 422 naming the field that changes nothing (not the stored
// row, not the cached copy).
import { expect, test } from 'bun:test'
import { instructionsKey } from '../../src/conversation/instructions/store.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import { conversationApp, get, newUser, post } from '../support/conversation-app.ts'
import { bearerFor } from '../support/identity-token.ts'

const PATH = '/backend-api/user_system_messages'
const DEFAULTS = {
  object: 'user_system_message_detail',
  enabled: false,
  about_user_message: '',
  about_model_message: '',
}

describeEachBackend({}, (t, backend) => {
  const read = async (user: string) => {
    const response = await get(t.app, PATH, { 'x-user-id': user })
    expect(response.status).toBe(200)
    return (await response.json()) as Record<string, unknown>
  }

  const write = (user: string, body: unknown) => post(t.app, PATH, body, { 'x-user-id': user })

  test('a user who set nothing gets the defaults', async () => {
    expect(await read(newUser())).toEqual(DEFAULTS)
    // The query parameter names the caller as on every read.
    const response = await get(t.app, `${PATH}?user_id=${newUser()}`)
    expect(await response.json()).toEqual(DEFAULTS)
  })

  test('POST sets the fields it gives, answers the whole object, and GET reads it back', async () => {
    const user = newUser()
    const response = await write(user, {
      enabled: true,
      about_user_message: 'I teach chemistry.',
      about_model_message: 'Use SI units.',
    })
    expect(response.status).toBe(200)
    const expected = {
      ...DEFAULTS,
      enabled: true,
      about_user_message: 'I teach chemistry.',
      about_model_message: 'Use SI units.',
    }
    expect(await response.json()).toEqual(expected)
    expect(await read(user)).toEqual(expected)
    // A later POST changes only what it names; null clears a text.
    await write(user, { enabled: false })
    expect(await read(user)).toEqual({ ...expected, enabled: false })
    await write(user, { about_model_message: null })
    expect(await read(user)).toEqual({ ...expected, enabled: false, about_model_message: '' })
  })

  test("unknown fields of newer clients are kept and returned; the body's identity and tag are not", async () => {
    const user = newUser()
    await write(user, {
      object: 'user_system_message_detail',
      user_id: user,
      enabled: true,
      name_user_message: 'Sam',
      traits_model_message: 'Chatty',
      disabled_tools: ['browser', 'dalle'],
      memory_enabled: false,
    })
    const stored = await read(user)
    expect(stored).toEqual({
      ...DEFAULTS,
      enabled: true,
      name_user_message: 'Sam',
      traits_model_message: 'Chatty',
      disabled_tools: ['browser', 'dalle'],
      memory_enabled: false,
    })
    expect(Object.keys(stored).slice(0, 4)).toEqual(Object.keys(DEFAULTS))
    // A later change to one of them keeps the others.
    await write(user, { traits_model_message: 'Quiet' })
    expect(await read(user)).toMatchObject({
      name_user_message: 'Sam',
      traits_model_message: 'Quiet',
    })
  })

  test("each user has their own; a user's change drops only their cached copy", async () => {
    const alice = newUser()
    const bob = newUser()
    await write(alice, { enabled: true, about_user_message: 'Alice here.' })
    expect((await read(alice)).about_user_message).toBe('Alice here.')
    expect(await read(bob)).toEqual(DEFAULTS)
    // Both are cached now; Alice's change is seen at once, Bob's copy stays.
    expect(await t.cache.get(instructionsKey(alice))).not.toBeNull()
    expect(await t.cache.get(instructionsKey(bob))).not.toBeNull()
    await write(alice, { about_user_message: 'Alice again.' })
    expect(await t.cache.get(instructionsKey(alice))).toBeNull()
    expect(await t.cache.get(instructionsKey(bob))).not.toBeNull()
    expect((await read(alice)).about_user_message).toBe('Alice again.')
    expect((await read(bob)).about_user_message).toBe('')
  })

  test('1,500 characters is the limit of each text, counted as characters (not UTF-16 units)', async () => {
    const user = newUser()
    const emoji = '🐳'.repeat(1500)
    expect((await write(user, { about_user_message: emoji })).status).toBe(200)
    expect((await read(user)).about_user_message).toBe(emoji)
  })

  test('bad input is a 422 naming the field, and changes nothing', async () => {
    const user = newUser()
    const good = { enabled: true, about_user_message: 'Kept.', custom_field: 'kept too' }
    await write(user, good)
    const before = await read(user)
    const cases: [unknown, string][] = [
      [{ about_user_message: 'x'.repeat(1501) }, 'about_user_message'],
      [{ about_model_message: 'é'.repeat(1501) }, 'about_model_message'],
      [{ enabled: 'yes' }, 'enabled'],
      [{ enabled: null }, 'enabled'],
      [{ about_user_message: 42 }, 'about_user_message'],
      [{ about_model_message: ['a'] }, 'about_model_message'],
      [{ name_user_message: 'y'.repeat(1501) }, 'name_user_message'],
      [{ huge_field: { nested: 'z'.repeat(5000) } }, 'huge_field'],
      [JSON.parse('{"__proto__": {"enabled": true}}'), '__proto__'],
      [{ constructor_: 1, 'Bad-Name': 1 }, 'Bad-Name'],
      [{ ['n'.repeat(65)]: 1 }, 'n'.repeat(64)],
      [{ about_user_message: 'nul \u0000 inside' }, 'about_user_message'],
      [{ about_user_message: 'lone \ud800 surrogate' }, 'about_user_message'],
      [Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`field_${i}`, i])), 'fields'],
      [[{ enabled: true }], 'body'],
      ['"just a string"', 'body'],
      ['{"enabled": true', 'JSON'],
    ]
    for (const [body, field] of cases) {
      const response = await write(user, body)
      expect(response.status).toBe(422)
      const error = (await response.json()) as { detail: string; code: string }
      expect(error.detail).toContain(field)
      expect(typeof error.code).toBe('string')
    }
    expect(await read(user)).toEqual(before)
    // The prototype of nothing was touched by the hostile key.
    expect(({} as { enabled?: unknown }).enabled).toBeUndefined()
  })

  test('unknown fields are bounded per user across POSTs', async () => {
    const user = newUser()
    const first = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`first_${i}`, i]))
    expect((await write(user, first)).status).toBe(200)
    const more = await write(user, { second_a: 1, second_b: 2, second_c: 3 })
    expect(more.status).toBe(422)
    expect(Object.keys(await read(user))).toHaveLength(4 + 30)
  })

  test('no user is 401; with JWT auth the token names the user and a body user_id must agree', async () => {
    expect((await get(t.app, PATH)).status).toBe(401)
    expect((await post(t.app, PATH, { enabled: true })).status).toBe(401)
    const secret = 'instructions-jwt-secret-of-32-bytes-at-least'
    const jwt = await conversationApp({ backend, env: { AUTH_JWT_SECRET: secret } })
    const user = newUser()
    const bearer = await bearerFor(user, secret)
    expect((await get(jwt.app, PATH, { 'x-user-id': user })).status).toBe(401)
    const set = await post(jwt.app, PATH, { enabled: true, about_user_message: 'JWT me' }, bearer)
    expect(set.status).toBe(200)
    expect(await (await get(jwt.app, PATH, bearer)).json()).toMatchObject({
      about_user_message: 'JWT me',
    })
    const other = await post(jwt.app, PATH, { user_id: newUser(), enabled: false }, bearer)
    expect(other.status).toBe(403)
    expect(await (await get(jwt.app, PATH, bearer)).json()).toMatchObject({ enabled: true })
  })
})
