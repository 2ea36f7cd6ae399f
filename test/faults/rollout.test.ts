// A Kubernetes rollout as a replica sees it (CONTRACT §8, §19; issue #29):
// SIGTERM, then the load balancer keeps sending for a few seconds before its
// endpoints are removed. The server in the default configuration (embedded
// database, in-process cache, rate limits on) has a turn streaming; on
// SIGTERM `/ready` answers 503 at once, while for the drain every request
// still gets its answer - no refused connection, health 200, and a send made
// then streams to [DONE] - and the stream already running ends with [DONE]
// carrying its whole reply, no error item; then the process exits 0.
import { afterAll, describe, expect, test } from 'bun:test'
import {
  appendedChunks,
  exitCode,
  killAllServers,
  reading,
  send,
  sleep,
  startReadyServer,
} from '../support/server-process.ts'
import { completeFrames } from '../support/sse-frames.ts'

const DRAIN_MS = 3_000
/** How long the "load balancer" keeps sending after it saw /ready turn 503: well inside the drain. */
const SENDING_AFTER_UNREADY_MS = 2_000
/** Between two requests of the load balancer's traffic. */
const REQUEST_EVERY_MS = 100

afterAll(killAllServers)

const words = (count: number) => Array.from({ length: count }, (_, i) => `word${i}`).join(' ')

/** What one request answered, or the error that kept it from being answered (a refused connection). */
async function outcome(run: () => Promise<Response>): Promise<string> {
  try {
    const response = await run()
    const body = await response.text()
    if (response.status !== 200) return `${response.status} ${body}`
    return body.includes('data: [DONE]') ||
      !response.headers.get('content-type')?.includes('event-stream')
      ? '200'
      : '200 without [DONE]'
  } catch (error) {
    return `failed: ${error instanceof Error ? error.message : String(error)}`
  }
}

describe('SIGTERM during a rollout', () => {
  test('/ready is 503 at once; every request of the drain is answered; streams end; exit 0', async () => {
    const server = await startReadyServer({
      SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
      LOCAL_MODEL_CHUNK_DELAY_MS: '50',
    })
    const running = reading(await send(server.base, 'rollout-user', words(40)))
    await running.until((text) => appendedChunks(text).length >= 3)

    expect((await fetch(`${server.base}/ready`)).status).toBe(200)
    server.proc.kill('SIGTERM')
    // The signal is handled on the server's next loop turn: /ready turns 503 then.
    let readyStatus = 200
    const signalled = Date.now()
    while (readyStatus === 200 && Date.now() - signalled < 1_000) {
      const response = await fetch(`${server.base}/ready`)
      readyStatus = response.status
      await response.arrayBuffer()
    }
    expect(readyStatus).toBe(503)
    const unready = Date.now()

    // The load balancer has not noticed yet: health checks and sends go on.
    const answers: Promise<string>[] = []
    for (let i = 0; Date.now() - unready < SENDING_AFTER_UNREADY_MS; i++) {
      answers.push(outcome(() => fetch(`${server.base}/health`)))
      if (i % 5 === 0) answers.push(outcome(() => send(server.base, `rollout-late-${i}`, words(5))))
      await sleep(REQUEST_EVERY_MS)
    }
    const outcomes = await Promise.all(answers)
    expect(outcomes.length).toBeGreaterThan(15)
    expect(outcomes.filter((answer) => answer !== '200')).toEqual([])

    const body = await running.until(() => false)
    expect(completeFrames(body).at(-1)).toBe('data: [DONE]\n\n')
    // The whole reply (the local model repeats the message, then asks for more), no error item.
    const reply = appendedChunks(body).join('')
    expect(reply).toContain(words(40))
    expect(reply.endsWith('Tell me more.')).toBe(true)
    expect(body).not.toContain('"error"')
    expect(await exitCode(server.proc)).toBe(0)
  }, 30_000)
})
