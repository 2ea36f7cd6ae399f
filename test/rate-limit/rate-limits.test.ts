// Per-user rate limits of the running application, on every backend (counted
// in memory on the embedded one, in Redis on the real one): past RATE_LIMIT_SENDS
// a user's send gets 429 {"detail","code":"rate_limited"} with Retry-After,
// others are unaffected, every request counts against the looser limit,
// refused input counts nothing, probes and anonymous requests are not
// limited, and with JWT auth the verified user is the one counted. The
// capacity 429 (MAX_RUNNING_CONVERSATIONS) carries a Retry-After too.
import { afterAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import Redis from 'ioredis'
import { createMemoryRateLimiter } from '../../src/rate-limit/memory-rate-limiter.ts'
import type { RateLimits } from '../../src/rate-limit/rate-limit-plugin.ts'
import type { RateLimitPolicy } from '../../src/rate-limit/rate-limiter.ts'
import { createRedisRateLimiter } from '../../src/rate-limit/redis-rate-limiter.ts'
import { type AppBackend, appBackends, TEST_REDIS_URL, uniqueName } from '../support/backends.ts'
import { conversationApp, get, newUser, post, textMessage } from '../support/conversation-app.ts'
import { bearerFor } from '../support/identity-token.ts'
import { bearer, jwksEnv, providerKey, providerToken, startJwksServer } from '../support/jwks.ts'
import { reading } from '../support/server-process.ts'
import { gatedModel } from '../support/test-models.ts'

const clients: Redis[] = []
afterAll(() => {
  for (const client of clients) client.disconnect()
})

/** Limits on the backend's kind of store: memory for embedded, Redis for real. */
async function limitsFor(
  backend: AppBackend,
  sends: number,
  requests: number,
): Promise<RateLimits> {
  const policy = (name: string, points: number): RateLimitPolicy => ({
    name,
    points,
    windowSeconds: 60,
  })
  const { breaker } = await backend.state()
  if (backend.name === 'real' && TEST_REDIS_URL && breaker) {
    const redis = new Redis(TEST_REDIS_URL, {
      enableOfflineQueue: false,
      enableAutoPipelining: true,
    })
    clients.push(redis)
    // Until it is connected the limiter counts in memory (its fallback); these tests count in Redis.
    await new Promise((resolve) => redis.once('ready', resolve))
    const keyPrefix = `${uniqueName('rl')}:`
    // As the service wires it (dependencies.ts): through the state's breaker,
    // the requests limit taking points in blocks and counting locally while
    // Redis is unavailable, sends refused then.
    return {
      sends: createRedisRateLimiter(policy('sends', sends), {
        redis,
        breaker,
        whenUnavailable: 'refuse',
        keyPrefix,
      }),
      requests: createRedisRateLimiter(policy('requests', requests), {
        redis,
        breaker,
        timeoutMs: 500,
        whenUnavailable: 'count-locally',
        keyPrefix,
        reserveBlocks: true,
      }),
    }
  }
  return {
    sends: createMemoryRateLimiter(policy('sends', sends)),
    requests: createMemoryRateLimiter(policy('requests', requests)),
  }
}

const sendBody = (user: string) => ({ user_id: user, messages: [textMessage('hello')] })

async function expectRateLimited(response: Response) {
  expect(response.status).toBe(429)
  const retryAfter = Number(response.headers.get('retry-after'))
  expect(Number.isInteger(retryAfter)).toBe(true)
  expect(retryAfter).toBeGreaterThanOrEqual(1)
  expect(retryAfter).toBeLessThanOrEqual(60)
  const body = (await response.json()) as { detail: string; code: string }
  expect(body.code).toBe('rate_limited')
  expect(body.detail.length).toBeGreaterThan(10)
}

for (const backend of appBackends())
  describe(backend.name, () => {
    test('sends past the limit get 429 rate_limited with Retry-After; other users are unaffected', async () => {
      const t = await conversationApp({ backend, rateLimits: await limitsFor(backend, 2, 100) })
      const user = newUser()
      for (let i = 0; i < 2; i++) {
        const response = await post(t.app, '/backend-api/f/conversation', sendBody(user))
        expect(response.status).toBe(200)
        await response.text()
      }
      await expectRateLimited(await post(t.app, '/backend-api/f/conversation', sendBody(user)))
      // The refused send stored nothing: the user still has two conversations.
      const list = await get(t.app, '/backend-api/conversations', { 'x-user-id': user })
      expect(((await list.json()) as { total: number }).total).toBe(2)
      const other = await post(t.app, '/backend-api/f/conversation', sendBody(newUser()))
      expect(other.status).toBe(200)
      await other.text()
    })

    test("a client's retry of a send is not refused at the limit: it gets the original's stream", async () => {
      const t = await conversationApp({ backend, rateLimits: await limitsFor(backend, 1, 100) })
      const user = newUser()
      const body = { user_id: user, messages: [textMessage('only once', randomUUID())] }
      const first = await post(t.app, '/backend-api/f/conversation', body)
      expect(first.status).toBe(200)
      const original = await first.text()
      await t.conversations.whenIdle()
      // At the limit now: the same send again replays the stored turn, to the same bytes.
      const retry = await post(t.app, '/backend-api/f/conversation', body)
      expect(retry.status).toBe(200)
      expect(await retry.text()).toBe(original)
      // A new send and one with other content under the same id are refused.
      await expectRateLimited(await post(t.app, '/backend-api/f/conversation', sendBody(user)))
      const changed = { ...body, messages: [textMessage('changed', body.messages[0]?.id)] }
      await expectRateLimited(await post(t.app, '/backend-api/f/conversation', changed))
      // Another user's same message id is their own send, refused at their limit like any.
      const other = { ...body, user_id: newUser() }
      expect((await post(t.app, '/backend-api/f/conversation', other)).status).toBe(200)
      await t.conversations.whenIdle()
      await expectRateLimited(
        await post(t.app, '/backend-api/f/conversation', {
          ...other,
          messages: [textMessage('next')],
        }),
      )
      const list = await get(t.app, '/backend-api/conversations', { 'x-user-id': user })
      expect(((await list.json()) as { total: number }).total).toBe(1)
    })

    test('100 parallel sends of one user: only the limit gets through', async () => {
      const t = await conversationApp({ backend, rateLimits: await limitsFor(backend, 5, 1_000) })
      const user = newUser()
      const responses = await Promise.all(
        Array.from({ length: 100 }, () =>
          post(t.app, '/backend-api/f/conversation', sendBody(user)),
        ),
      )
      await Promise.all(responses.map((response) => response.text()))
      const statuses = responses.map((response) => response.status)
      expect(statuses.filter((status) => status === 200)).toHaveLength(5)
      expect(statuses.filter((status) => status === 429)).toHaveLength(95)
      await t.conversations.whenIdle()
    })

    test('every request of a user counts against the looser limit; reads too', async () => {
      const t = await conversationApp({ backend, rateLimits: await limitsFor(backend, 100, 3) })
      const user = newUser()
      for (let i = 0; i < 3; i++)
        expect((await get(t.app, '/backend-api/conversations', { 'x-user-id': user })).status).toBe(
          200,
        )
      await expectRateLimited(await get(t.app, `/backend-api/conversations?user_id=${user}`))
      expect(
        (await get(t.app, '/backend-api/conversations', { 'x-user-id': newUser() })).status,
      ).toBe(200)
    })

    test('refused input counts nothing; probes and anonymous requests are not limited', async () => {
      const t = await conversationApp({ backend, rateLimits: await limitsFor(backend, 1, 100) })
      const user = newUser()
      for (let i = 0; i < 5; i++) {
        const invalid = await post(t.app, '/backend-api/f/conversation', { user_id: user })
        expect(invalid.status).toBe(422)
      }
      const hostile = await post(t.app, '/backend-api/f/conversation', {
        user_id: 'u'.repeat(10_000),
        messages: [textMessage('x')],
      })
      expect(hostile.status).toBe(422)
      const sent = await post(t.app, '/backend-api/f/conversation', sendBody(user))
      expect(sent.status).toBe(200)
      await sent.text()
      for (let i = 0; i < 5; i++) {
        expect((await get(t.app, '/health')).status).toBe(200)
        expect((await get(t.app, '/ready')).status).toBe(200)
      }
    })

    test('with JWT auth the verified user is counted, whatever user_id the body claims', async () => {
      const secret = 'rate-limit-jwt-secret-of-32-bytes-at-least'
      const t = await conversationApp({
        backend,
        env: { AUTH_JWT_SECRET: secret },
        rateLimits: await limitsFor(backend, 1, 100),
      })
      const user = newUser()
      const auth = await bearerFor(user, secret)
      const first = await post(
        t.app,
        '/backend-api/f/conversation',
        { messages: [textMessage('a')] },
        auth,
      )
      expect(first.status).toBe(200)
      await first.text()
      await expectRateLimited(
        await post(t.app, '/backend-api/f/conversation', { messages: [textMessage('b')] }, auth),
      )
      // A forged identity without a valid token is not counted, and still refused as 401.
      const forged = await post(t.app, '/backend-api/f/conversation', sendBody(user), {
        authorization: 'Bearer forged',
      })
      expect(forged.status).toBe(401)
    })

    test("with a provider's JWKS the verified user is counted the same way", async () => {
      const jwks = await startJwksServer()
      try {
        const signing = await providerKey('ES256', 'rate-limit-kid')
        await jwks.publish([signing])
        const t = await conversationApp({
          backend,
          env: jwksEnv(jwks),
          rateLimits: await limitsFor(backend, 1, 100),
        })
        const user = newUser()
        const auth = bearer(await providerToken(signing, user))
        const first = await post(
          t.app,
          '/backend-api/f/conversation',
          { messages: [textMessage('a')] },
          auth,
        )
        expect(first.status).toBe(200)
        await first.text()
        // Another token of the same user: the same count.
        const again = bearer(await providerToken(signing, user, { expiresAt: '2h' }))
        await expectRateLimited(
          await post(t.app, '/backend-api/f/conversation', { messages: [textMessage('b')] }, again),
        )
        const forged = await post(t.app, '/backend-api/f/conversation', sendBody(user), {
          authorization: 'Bearer forged',
        })
        expect(forged.status).toBe(401)
      } finally {
        await jwks.stop()
      }
    })
  })

describe('the capacity 429', () => {
  test('past MAX_RUNNING_CONVERSATIONS a send gets 429 with Retry-After', async () => {
    const [backend] = appBackends()
    if (!backend) throw new Error('no backend')
    // Answers only once released, so the turn stays running.
    const held = gatedModel({ slug: 'held' })
    const t = await conversationApp({
      backend,
      model: held,
      env: { MAX_RUNNING_CONVERSATIONS: '1' },
    })
    const running = await post(t.app, '/backend-api/f/conversation', sendBody(newUser()))
    expect(running.status).toBe(200)
    const stream = reading(running)
    const busy = await post(t.app, '/backend-api/f/conversation', sendBody(newUser()))
    expect(busy.status).toBe(429)
    expect(Number(busy.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(((await busy.json()) as { code: string }).code).toBe('too_many_requests')
    held.release()
    await stream.until((text) => text.includes('[DONE]'))
    await t.conversations.whenIdle()
  })
})
