// The real entry point as an operator runs it (`bun run src/index.ts`, embedded
// storage, loopback only): it serves, refuses a DATA_DIR another process holds,
// stops on a bad APP_VARIANT, PORT or AUTH_JWT_SECRET with a one-line message,
// streams a send, and on SIGTERM lets a running turn finish, persists it and exits 0 - or,
// past the grace period, stops it as interrupted and stores it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { VARIANTS } from '../src/config.ts'
import {
  answers200,
  appendedChunks,
  dataItems,
  exitCode,
  killAllServers,
  reading,
  runToExit,
  type Server,
  send,
  startReadyServer,
} from './support/server-process.ts'

/** Spawning bun is quick, but not on a machine busy with other test runs. */
const SPAWN_TEST_TIMEOUT_MS = 30_000
const DONE = 'data: [DONE]\n\n'

afterAll(killAllServers)

describe('the entry point', () => {
  let server: Server

  beforeAll(async () => {
    server = await startReadyServer()
  }, 60_000)

  test(
    'a second process on the same DATA_DIR exits non-zero, saying it is in use',
    async () => {
      const { code, stderr } = await runToExit({ DATA_DIR: server.dataDir })
      expect(code).not.toBe(0)
      expect(stderr).toContain('DATA_DIR')
      expect(stderr).toContain('in use')
      // The first process is unaffected.
      expect(server.proc.exitCode).toBeNull()
      expect(await answers200(`${server.base}/backend-api/conversations?user_id=probe`)).toBe(true)
    },
    SPAWN_TEST_TIMEOUT_MS,
  )

  test(
    'APP_VARIANT=bogus exits non-zero with one line listing the valid values',
    async () => {
      const { code, stderr } = await runToExit({ APP_VARIANT: 'bogus' })
      expect(code).not.toBe(0)
      const message = stderr.trim()
      expect(message.split('\n')).toHaveLength(1)
      expect(message).toContain('APP_VARIANT')
      for (const variant of VARIANTS) expect(message).toContain(variant)
    },
    SPAWN_TEST_TIMEOUT_MS,
  )

  test(
    'PORT=abc exits non-zero naming PORT',
    async () => {
      const { code, stderr } = await runToExit({ PORT: 'abc' })
      expect(code).not.toBe(0)
      expect(stderr).toContain('PORT')
    },
    SPAWN_TEST_TIMEOUT_MS,
  )

  test(
    'an AUTH_JWT_SECRET shorter than 32 bytes exits non-zero with one line naming it, not showing it',
    async () => {
      const secret = 'too-short-a-jwt-secret'
      const { code, stderr } = await runToExit({ AUTH_JWT_SECRET: secret })
      expect(code).not.toBe(0)
      expect(stderr).toBe(
        'conduit: AUTH_JWT_SECRET must be at least 32 bytes (for example: openssl rand -hex 32)\n',
      )
    },
    SPAWN_TEST_TIMEOUT_MS,
  )

  test(
    'a send streams text/event-stream ending in [DONE]',
    async () => {
      const response = await send(server.base, 'u1', 'hi')
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toStartWith('text/event-stream')
      const body = await response.text()
      expect(body).toStartWith('event: delta_encoding\ndata: "v1"\n\n')
      expect(body).toContain('"type":"message_stream_complete"')
      expect(body).toEndWith(DONE)
      expect(appendedChunks(body).length).toBeGreaterThanOrEqual(2)

      const list = await fetch(`${server.base}/backend-api/conversations?user_id=u1`)
      expect(list.status).toBe(200)
      expect(((await list.json()) as { total: unknown }).total).toBe(1)
    },
    SPAWN_TEST_TIMEOUT_MS,
  )
})

describe('SIGTERM', () => {
  test('a send that is mid-stream completes, the turn is stored, and the exit code is 0', async () => {
    const slow = await startReadyServer({ LOCAL_MODEL_CHUNK_DELAY_MS: '50' })

    const response = await send(slow.base, 'u-sigterm', 'please tell me a rather long story')
    expect(response.status).toBe(200)
    const stream = reading(response)
    const before = await stream.until((text) => text.includes('"o":"append"'))
    expect(before).not.toContain(DONE)

    slow.proc.kill('SIGTERM')
    const body = await stream.until(() => false)
    const after = body.slice(before.length)

    // The turn was still running when SIGTERM arrived, and finished normally.
    expect(appendedChunks(after).length).toBeGreaterThan(0)
    expect(body).toContain('{"p":"/message/status","o":"replace","v":"finished_successfully"}')
    expect(body).toContain('"type":"message_stream_complete"')
    expect(body).toEndWith(DONE)
    expect(await exitCode(slow.proc)).toBe(0)

    // The whole reply was stored before the process let go of its database.
    const conversationId = dataItems(body).find(
      (item) => item.type === 'resume_conversation_token',
    )?.conversation_id
    expect(typeof conversationId).toBe('string')
    const again = await startReadyServer({ DATA_DIR: slow.dataDir })
    const history = await fetch(
      `${again.base}/backend-api/conversation/${conversationId}?user_id=u-sigterm`,
    )
    expect(history.status).toBe(200)
    const { messages } = (await history.json()) as {
      messages: { role: string; content: { parts: string[] } }[]
    }
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant'])
    expect(messages[1]?.content.parts.join('')).toBe(appendedChunks(body).join(''))
    again.proc.kill('SIGTERM')
    expect(await exitCode(again.proc)).toBe(0)
  }, 90_000)
})

describe('SIGTERM past the grace period', () => {
  test('a turn still running is stopped as interrupted, stored as streamed, and the exit code is 0', async () => {
    const slow = await startReadyServer({
      LOCAL_MODEL_CHUNK_DELAY_MS: '100',
      SHUTDOWN_GRACE_MS: '300',
    })
    const stream = reading(await send(slow.base, 'u-grace', 'please tell me a very long story'))
    await stream.until((text) => text.includes('"o":"append"'))
    slow.proc.kill('SIGTERM')
    const body = await stream.until(() => false)
    expect(body).toContain('"finish_details":{"type":"interrupted"}')
    expect(body).not.toContain('"type":"error"')
    expect(body).toEndWith(DONE)
    expect(await exitCode(slow.proc)).toBe(0)

    const conversationId = dataItems(body)[1]?.conversation_id
    const again = await startReadyServer({ DATA_DIR: slow.dataDir })
    const history = await fetch(
      `${again.base}/backend-api/conversation/${conversationId}?user_id=u-grace`,
    )
    const { messages } = (await history.json()) as {
      messages: { role: string; content: { parts: string[] } }[]
    }
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant'])
    expect(messages[1]?.content.parts[0]).toBe(appendedChunks(body).join(''))
    again.proc.kill('SIGTERM')
    expect(await exitCode(again.proc)).toBe(0)
  }, 90_000)
})
