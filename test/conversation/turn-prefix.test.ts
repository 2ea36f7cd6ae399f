// A turn's first frames (prefix.ts) are the same bytes whenever they are
// built: the send's acceptance writes them, and a runner that writes its log
// back after the store lost it (a flush, a Cluster or Sentinel failover:
// reply-log.ts) builds them again, later. A resume from item 0 then reads what
// the live stream was sent (CONTRACT §18: a failover duplicates no item to a
// resuming client) - the resume token included, which is signed as of the
// turn's creation, valid for 2 hours from then. The clock is moved with
// bun:test's setSystemTime.
import { afterEach, expect, setSystemTime, test } from 'bun:test'
import { createResumeTokens } from '../../src/conversation/stream/resume-token.ts'
import { signedPrefix } from '../../src/conversation/turn/prefix.ts'
import { frameData } from '../support/sse-frames.ts'

afterEach(() => setSystemTime())

const tokens = createResumeTokens('test-resume-secret-of-32-bytes!!')
const acceptedAt = Date.now()
const turn = {
  conversationId: 'c-1',
  messageId: 'm-1',
  createTime: acceptedAt / 1000,
  modelSlug: 'local',
  parentId: 'u-1',
  messageType: 'next' as const,
  inputs: [],
}

test("built again seconds later, a turn's first frames are the bytes its readers were sent", async () => {
  const accepted = signedPrefix({ tokens }, 'user-1', turn)
  setSystemTime(new Date(acceptedAt + 7_000))
  const rebuilt = signedPrefix({ tokens }, 'user-1', turn)
  expect(rebuilt).toEqual(accepted)
  // The token they carry is good, for the turn's user, conversation and reply.
  const { token } = frameData<{ token: string }>(rebuilt[1])
  expect(await tokens.verify(token)).toEqual({
    userId: 'user-1',
    conversationId: 'c-1',
    messageId: 'm-1',
  })
})

test("a turn's resume token is valid for 2 hours from the turn's creation", async () => {
  const [, frame] = signedPrefix({ tokens }, 'user-1', turn)
  const { token } = frameData<{ token: string }>(frame)
  setSystemTime(new Date(acceptedAt + 2 * 3_600_000 - 60_000))
  expect((await tokens.verify(token)).messageId).toBe('m-1')
  setSystemTime(new Date(acceptedAt + 2 * 3_600_000 + 60_000))
  await expect(tokens.verify(token)).rejects.toMatchObject({ kind: 'unauthenticated' })
})
