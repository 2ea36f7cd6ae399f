// Turns that stream across a Redis failover (CONTRACT §18, §19), on the
// multi-instance servers of multi-instance-suite.ts: several turns run on one
// instance, each followed from another instance through the fault, while
// `fail` takes Redis (or the Cluster master holding their logs) away and
// brings a replica in. Afterwards every turn rides through: its stream ended
// with [DONE], the whole reply and no error item, stored exactly as streamed
// (turn-audit.ts), every item once (the live stream, the follower and a
// resume from 0 are the same bytes); a request made meanwhile answered within
// the bound, and the new primary takes sends.
import { expect } from 'bun:test'
import { localReply } from '../../src/conversation/model/local.ts'
import type { Instances } from './multi-instance-suite.ts'
import { dataItems, type Server, send } from './server-process.ts'
import { completeFrames, frameData } from './sse-frames.ts'
import { auditSends, type RunningSend, startSend } from './turn-audit.ts'

/** Longest a request may take while Redis fails over: the state's 2 s deadline, and some. */
const REQUEST_BOUND_MS = 3_500

/** Long turns that stream all through a failover (62 chunks: about 6 s at 100 ms a chunk). */
const LONG_TURNS = 3

/** A turn whose reply (20 chunks) ends about when the failover does: its last writes cross it. */
const SHORT_MESSAGE = 'one short reply, please'

/**
 * The environment of the instance the turns run on: a lease longer than a
 * failover, so the turns ride through rather than being taken over, and
 * chunks slow enough that the long ones stream all along.
 */
export const failoverInstanceEnv = (env: Record<string, string>) => ({
  ...env,
  TURN_LEASE_MS: '10000',
  LOCAL_MODEL_CHUNK_DELAY_MS: '100',
})

interface FollowedTurn {
  sent: RunningSend
  /** The frames its stream had when the fault began, from which the follower reads on. */
  frames: string[]
  token: string
  conversationId: string
  messageId: string
  following: Response
}

/** A running send's first frames, and another instance following it from there. */
async function followed(
  instances: Instances,
  on: Server,
  sent: RunningSend,
): Promise<FollowedTurn> {
  const refused = sent.status !== 200
  expect({
    status: sent.status,
    refusal: sent.refusal,
    warnings: refused ? warnings(on) : [],
  }).toEqual({
    status: 200,
    refusal: undefined,
    warnings: [],
  })
  const frames = completeFrames(sent.stream?.text() ?? '')
  const { token, conversation_id: conversationId } = frameData<{
    token: string
    conversation_id: string
  }>(frames[1])
  const added = dataItems(frames.join('')).find((item) => item.o === 'add') as {
    v: { message: { id: string } }
  }
  const following = await instances.resume(instances.b, token, conversationId, frames.length)
  expect(following.status).toBe(200)
  return { sent, frames, token, conversationId, messageId: added.v.message.id, following }
}

/** A server's last warnings (its log lines at warn or above): what a failed expectation shows beside it. */
function warnings(server: Server): string[] {
  return server
    .stdout()
    .split('\n')
    .filter((line) => /"level":"(warn|error|fatal)"/.test(line))
    .slice(-20)
}

/**
 * Runs the turns on `on` across `fail` (given their reply ids: their logs'
 * names) and checks each as the file header says.
 */
export async function streamThroughFailover(
  instances: Instances,
  on: Server,
  fail: (messageIds: string[]) => Promise<void>,
) {
  const { b, user, headers, resume } = instances
  const long = await Promise.all(
    Array.from({ length: LONG_TURNS }, () => startSend(on.base, user())),
  )
  const short = await startSend(on.base, user(), SHORT_MESSAGE, 1)
  const turns = await Promise.all([...long, short].map((sent) => followed(instances, on, sent)))
  const failing = fail(turns.map((turn) => turn.messageId))

  // Meanwhile a request that needs the state answers, at worst with a 503, never hangs.
  const [first] = turns as [FollowedTurn]
  const asked = Date.now()
  const status = await fetch(
    `${b.base}/backend-api/conversation/${first.conversationId}/stream_status`,
    { headers: headers(first.sent.userId) },
  )
  await status.arrayBuffer()
  expect(Date.now() - asked).toBeLessThan(REQUEST_BOUND_MS)
  expect([200, 503]).toContain(status.status)
  await failing

  const audited = await auditSends(
    turns.map((turn) => turn.sent),
    'state_unavailable',
  )
  expect(audited).toHaveLength(turns.length)
  for (const [index, { body, streamed }] of audited.entries()) {
    const turn = turns[index] as FollowedTurn
    const user = turn.sent.userId
    // Rode through: the whole reply, no error item.
    expect({ user, errors: dataItems(body).filter((item) => item.type === 'error') }).toEqual({
      user,
      errors: [],
    })
    expect(body).toContain('"finish_details":{"type":"stop"}')
    expect({ user, streamed }).toEqual({
      user,
      streamed: localReply([{ role: 'user', content: turn.sent.message }]),
    })
    // Every item once: the follower on another instance, and a resume from 0 there, got the same bytes.
    const frames = completeFrames(body).join('')
    expect({ user, followed: turn.frames.join('') + (await turn.following.text()) }).toEqual({
      user,
      followed: frames,
    })
    const whole = await (await resume(b, turn.token, turn.conversationId, 0)).text()
    expect({ user, whole }).toEqual({ user, whole: frames })
  }

  // The new primary takes sends.
  const next = await (
    await send(b.base, first.sent.userId, 'still there?', {
      conversation_id: first.conversationId,
    })
  ).text()
  expect({ next, warnings: next.endsWith('data: [DONE]\n\n') ? [] : warnings(b) }).toEqual({
    next: expect.stringMatching(/"finish_details":\{"type":"stop"\}[\s\S]*data: \[DONE\]\n\n$/),
    warnings: [],
  })
  // The instance the turns ran on lived through it.
  expect(on.proc.exitCode).toBeNull()
}
