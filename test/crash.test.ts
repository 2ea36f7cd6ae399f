// Crash safety with the embedded defaults (CONTRACT §13): the reply so far is
// checkpointed to the database at least once a second, so when the process
// running a turn is killed (SIGKILL) and restarted on the same DATA_DIR, the
// restarted process finishes that turn as `finished_partial_completion` with
// the text checkpointed before the crash, then runs the send queued behind it.
import { afterAll, expect, test } from 'bun:test'
import { localReply } from '../src/conversation/model/local.ts'
import { createPgliteDb } from '../src/storage/pglite.ts'
import {
  appendedChunks,
  dataItems,
  exitCode,
  killAllServers,
  reading,
  send,
  startReadyServer,
} from './support/server-process.ts'
import { completeFrames } from './support/sse-frames.ts'

afterAll(killAllServers, 30_000)

const LONG =
  'tell me everything, at length, word after word, so that the reply streams for a few seconds ' +
  'and the checkpoint of the text so far has happened at least once before the crash'
/** 60 ms between chunks: 30 chunks take 1.8 s, past the 1 s checkpoint. */
const env = { LOCAL_MODEL_CHUNK_DELAY_MS: '60', TURN_LEASE_MS: '500' }

test('kill -9 mid-reply, restart: the reply is finished as partial with its checkpointed text', async () => {
  const first = await startReadyServer(env)
  const userId = 'crash-user'
  const stream = reading(await send(first.base, userId, LONG))
  await stream.until((text) => appendedChunks(completeFrames(text).join('')).length >= 30)
  first.proc.kill('SIGKILL')
  await first.proc.exited
  const streamed = appendedChunks(completeFrames(stream.text()).join('')).join('')
  const conversationId = dataItems(stream.text())[1]?.conversation_id as string

  const second = await startReadyServer({ ...env, DATA_DIR: first.dataDir })
  // Queued behind the dead turn: it runs once the restarted process finished that one.
  const next = await (
    await send(second.base, userId, 'are you back?', { conversation_id: conversationId })
  ).text()
  expect(next).toEndWith('data: [DONE]\n\n')
  expect(next).toContain('"finish_details":{"type":"stop"}')

  const response = await fetch(`${second.base}/backend-api/conversation/${conversationId}`, {
    headers: { 'x-user-id': userId },
  })
  expect(response.status).toBe(200)
  const { messages } = (await response.json()) as {
    messages: { id: string; role: string; content: { parts: string[] } }[]
  }
  expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
  const kept = messages[1]?.content.parts[0] ?? ''
  // Only the last second's text may be lost: a non-empty prefix of what was streamed.
  expect(kept.length).toBeGreaterThan(0)
  expect(streamed.startsWith(kept)).toBe(true)
  expect(messages[3]?.content.parts[0]).toBe(
    localReply([
      { role: 'user', content: LONG },
      { role: 'assistant', content: kept },
      { role: 'user', content: 'are you back?' },
    ]),
  )

  second.proc.kill('SIGTERM')
  expect(await exitCode(second.proc)).toBe(0)
  const db = await createPgliteDb(first.dataDir)
  try {
    const rows = await db.query<{
      status: string
      metadata: { finish_details?: { type: string } }
    }>('SELECT status, metadata FROM messages WHERE id = $1', [messages[1]?.id])
    expect(rows[0]?.status).toBe('finished_partial_completion')
    expect(rows[0]?.metadata.finish_details?.type).toBe('error')
  } finally {
    await db.close()
  }
}, 90_000)
