// Starts test/support/fake-openai-server.ts as a real process on loopback and
// reads back what it was sent. Killed by stop() (by its own pid).
import { join } from 'node:path'

const SCRIPT = join(import.meta.dir, 'fake-openai-server.ts')

export interface RecordedRequest {
  body: {
    model: string
    messages: {
      role: string
      content: string | null
      tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[]
      tool_call_id?: string
    }[]
    tools?: { type: string; function: { name: string; description: string; parameters: unknown } }[]
    stream?: boolean
    temperature?: number
    reasoning_effort?: string
    max_tokens?: number
    max_completion_tokens?: number
  }
  authorization: string | null
}

export interface FakeOpenAi {
  /** The base URL a catalogue entry names (`…/v1`). */
  baseUrl: string
  /** Every request it got, oldest first. */
  requests(): Promise<RecordedRequest[]>
  stop(): Promise<void>
}

export async function startFakeOpenAi(
  mode: 'slow' | 'failing',
  { chunkDelayMs = 20 }: { chunkDelayMs?: number } = {},
): Promise<FakeOpenAi> {
  const proc = Bun.spawn([process.execPath, 'run', SCRIPT], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      FAKE_MODE: mode,
      FAKE_CHUNK_DELAY_MS: String(chunkDelayMs),
    },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const reader = proc.stdout.getReader()
  const decoder = new TextDecoder()
  let text = ''
  let port: string | undefined
  const deadline = setTimeout(() => proc.kill('SIGKILL'), 15_000)
  while (port === undefined) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the fake OpenAI server (${mode}) exited: ${text}`)
    text += decoder.decode(value, { stream: true })
    port = /listening (\d+)/.exec(text)?.[1]
  }
  clearTimeout(deadline)
  reader.releaseLock()
  const origin = `http://127.0.0.1:${port}`
  return {
    baseUrl: `${origin}/v1`,
    requests: async () => (await (await fetch(`${origin}/requests`)).json()) as RecordedRequest[],
    async stop() {
      proc.kill('SIGKILL')
      await proc.exited
    },
  }
}
