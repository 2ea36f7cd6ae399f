// Starts test/support/fake-openai-server.ts as a real process on loopback and
// reads back what it was sent. Killed by stop() (by its own pid).
import { join } from 'node:path'
import { spawnListening } from './listening-process.ts'

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
  const server = await spawnListening(
    SCRIPT,
    { FAKE_MODE: mode, FAKE_CHUNK_DELAY_MS: String(chunkDelayMs) },
    `the fake OpenAI server (${mode})`,
    15_000,
  )
  const origin = `http://127.0.0.1:${server.port}`
  return {
    baseUrl: `${origin}/v1`,
    requests: async () => (await (await fetch(`${origin}/requests`)).json()) as RecordedRequest[],
    stop: server.stop,
  }
}
