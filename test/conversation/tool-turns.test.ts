import { afterAll, beforeAll, expect, test } from 'bun:test'
import { describeEachBackend } from '../support/backend-apps.ts'
import { chat2apiRead, gpt4freeRead, messagesById } from '../support/client-parsers.ts'
import {
  conversationIdOf,
  dataOf,
  framesOf,
  get,
  newUser,
  post,
  sendAndRead,
  textMessage,
} from '../support/conversation-app.ts'
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.ts'
import { stdioTestServer } from '../support/mcp-servers.ts'
import { sseReader } from '../support/sse-reader.ts'

// Tools and reasoning inside one turn (CONTRACT §21), over HTTP, with a fake
// OpenAI-compatible model running as a real process (scripted to reason and
// to call the tools named in the user's text) and a real MCP server process
// over stdio built on the official SDK: the stream carries chatgpt.com's
// shapes, the parsers of deployed clients still rebuild the answer, the
// mapping stores every step in the tree, and the thoughts and tool messages
// stay out of the next turn's context.

let fake: FakeOpenAi

beforeAll(async () => {
  fake = await startFakeOpenAi('slow', { chunkDelayMs: 1 })
}, 30_000)

afterAll(async () => {
  await fake?.stop()
})

const model = (slug: string, name: string, tools = true) => ({
  slug,
  provider: 'openai',
  model: name,
  base_url: fake.baseUrl,
  ...(tools ? { tools: true } : {}),
})

function catalogue() {
  return JSON.stringify([
    { slug: 'local', provider: 'local', default: true },
    model('tooled', 'tools-a'),
    model('thinker', 'reason-tools-b'),
    model('looper', 'tools-loop'),
    model('sloppy', 'tools-badjson'),
    model('plain-thinker', 'reason-c', false),
  ])
}

interface MappingNode {
  id: string
  parent: string | null
  children: string[]
  message: {
    id: string
    author: { role: string; name: string | null }
    content: Record<string, unknown> & { content_type: string }
    status: string
    end_turn: boolean | null
    recipient: string
    metadata: Record<string, unknown>
  } | null
}

describeEachBackend(
  () => ({
    env: {
      MODELS: catalogue(),
      MCP_SERVERS: JSON.stringify([stdioTestServer('local')]),
      TOOL_TIMEOUT_MS: '1500',
      TOOL_MAX_STEPS: '2',
      TOOL_OUTPUT_MAX_CHARS: '5000',
      MODEL_TIMEOUT_MS: '5000',
    },
    tools: true,
  }),
  (t) => {
    afterAll(async () => {
      await t.conversations.whenIdle()
      await t.close()
    })

    async function send(user: string, text: string, slug: string, conversation?: string) {
      const sent = await sendAndRead(t.app, {
        user_id: user,
        action: 'next',
        model: slug,
        ...(conversation ? { conversation_id: conversation } : {}),
        messages: [textMessage(text, crypto.randomUUID())],
      })
      expect(sent.response.status).toBe(200)
      return { ...sent, raws: sent.frames.map((frame) => frame.raw) }
    }

    async function mappingOf(user: string, id: string) {
      const response = await get(t.app, `/backend-api/conversation/${id}`, { 'x-user-id': user })
      expect(response.status).toBe(200)
      return (await response.json()) as {
        current_node: string
        mapping: Record<string, MappingNode>
      }
    }

    /** The messages from the root to the current node, in order. */
    function branch(detail: { current_node: string; mapping: Record<string, MappingNode> }) {
      const out: NonNullable<MappingNode['message']>[] = []
      for (let id: string | null = detail.current_node; id !== null; ) {
        const node = detail.mapping[id] as MappingNode
        if (node.message) out.unshift(node.message)
        id = node.parent
      }
      return out
    }

    test('a call and its result stream as chatgpt.com shapes, parsers read the answer, the mapping holds each step', async () => {
      const user = newUser()
      const { raws, frames } = await send(user, 'please call:echo now', 'tooled')
      const text = 'Tool results: please call:echo now'
      expect(gpt4freeRead(raws).text).toBe(text)
      expect(chat2apiRead(raws)).toBe(text)
      const messages = [...messagesById(raws).values()] as {
        author: { role: string; name?: string | null; metadata?: unknown }
        content: { content_type: string; text?: string; parts?: string[] }
        recipient: string
        end_turn: boolean | null
        status: string
      }[]
      expect(messages.map((message) => message.content.content_type)).toEqual([
        'text',
        'code',
        'execution_output',
      ])
      const [reply, call, result] = messages
      expect(call?.recipient).toBe('echo')
      expect(JSON.parse(call?.content.text ?? '')).toEqual({
        query: 'please call:echo now',
        text: 'please call:echo now',
      })
      expect(call?.end_turn).toBe(false)
      expect(result?.author).toEqual({ role: 'tool', name: 'echo', metadata: {} })
      expect(result?.content.text).toBe('please call:echo now')
      expect(reply?.content.parts?.join('')).toBe(text)
      expect(reply?.status).toBe('finished_successfully')
      expect(reply?.end_turn).toBe(true)
      // The stream ends as every stream does.
      expect(frames.at(-1)?.data).toBe('[DONE]')

      const detail = await mappingOf(user, conversationIdOf(frames))
      const path = branch(detail)
      expect(
        path.map((message) => `${message.author.role}:${message.content.content_type}`),
      ).toEqual(['user:text', 'assistant:code', 'tool:execution_output', 'assistant:text'])
      const [, storedCall, storedResult, storedReply] = path
      expect(storedCall?.recipient).toBe('echo')
      expect(storedCall?.end_turn).toBe(false)
      expect(storedResult?.author.name).toBe('echo')
      expect(storedResult?.content.text).toBe('please call:echo now')
      expect(storedReply?.content.parts).toEqual([text])
      expect(storedReply?.id).toBe(detail.current_node)
      expect(storedReply?.metadata.parent_id).toBe(storedResult?.id)
    })

    test('reasoning streams first as a thoughts message, is stored, and stays out of the next context', async () => {
      const user = newUser()
      const first = await send(user, 'think first', 'plain-thinker')
      expect(gpt4freeRead(first.raws)).toMatchObject({
        reasoning: 'Thinking about it.',
        text: 'Reply of reason-c to "think first" (1 messages).',
      })
      const conversation = conversationIdOf(first.frames)
      const path = branch(await mappingOf(user, conversation))
      expect(path.map((message) => message.content.content_type)).toEqual([
        'text',
        'thoughts',
        'text',
      ])
      const thoughts = path[1]?.content.thoughts as { content: string; finished: boolean }[]
      expect(thoughts[0]?.content).toBe('Thinking about it.')
      expect(thoughts[0]?.finished).toBe(true)

      const mark = `second${crypto.randomUUID().slice(0, 6)}`
      await send(user, mark, 'plain-thinker', conversation)
      const request = (await fake.requests()).find((sent) =>
        sent.body.messages.some((message) => message.content?.includes(mark)),
      )
      // user, reply, user: no thoughts, no tool messages.
      expect(request?.body.messages.map((message) => message.role)).toEqual([
        'user',
        'assistant',
        'user',
      ])
      expect(JSON.stringify(request?.body.messages)).not.toContain('Thinking about it.')
    })

    test('a tool that fails, an unknown tool and invalid arguments become error results; the turn answers', async () => {
      const user = newUser()
      const failing = await send(user, 'call:fail call:nosuch', 'tooled')
      const results = [...messagesById(failing.raws).values()].filter(
        (message) => (message as { author: { role: string } }).author.role === 'tool',
      ) as { content: { text: string }; metadata: { is_error?: boolean } }[]
      expect(results.map((result) => result.content.text)).toEqual([
        'it went wrong',
        'There is no tool named "nosuch".',
      ])
      expect(results.every((result) => result.metadata.is_error === true)).toBe(true)
      expect(gpt4freeRead(failing.raws).text).toBe(
        'Tool results: it went wrong | There is no tool named "nosuch".',
      )
      const detail = await mappingOf(user, conversationIdOf(failing.frames))
      const stored = branch(detail).filter((message) => message.author.role === 'tool')
      expect(stored.map((message) => message.metadata.is_error)).toEqual([true, true])

      const sloppy = await send(newUser(), 'call:echo', 'sloppy')
      expect(gpt4freeRead(sloppy.raws).text).toContain('The arguments are not valid JSON')
    })

    test('a hanging tool times out and a 10 MB result is capped; the turn still ends', async () => {
      const user = newUser()
      const { raws, frames } = await send(user, 'call:hang call:big', 'tooled')
      const results = [...messagesById(raws).values()].filter(
        (message) => (message as { author: { role: string } }).author.role === 'tool',
      ) as { content: { text: string } }[]
      expect(results[0]?.content.text).toBe('The tool hang did not answer within 1.5 s.')
      expect(results[1]?.content.text.length).toBeLessThanOrEqual(5000)
      expect(results[1]?.content.text).toContain('more characters cut]')
      expect(frames.at(-1)?.data).toBe('[DONE]')
      const stored = branch(await mappingOf(user, conversationIdOf(frames)))
      expect(stored.at(-1)?.status).toBe('finished_successfully')
    })

    test('an MCP server that exits mid-call gives an error result; the next turn finds it started again', async () => {
      const user = newUser()
      const crashed = await send(user, 'call:crash', 'tooled')
      const result = [...messagesById(crashed.raws).values()].find(
        (message) => (message as { author: { role: string } }).author.role === 'tool',
      ) as { content: { text: string }; metadata: { is_error?: boolean } } | undefined
      expect(result?.metadata.is_error).toBe(true)
      expect(result?.content.text).toStartWith('The tool crash failed')
      expect(crashed.frames.at(-1)?.data).toBe('[DONE]')
      const again = await send(user, 'call:echo', 'tooled')
      expect(gpt4freeRead(again.raws).text).toBe('Tool results: call:echo')
    })

    test('TOOL_MAX_STEPS bounds the rounds of calls; the last round offers no tools', async () => {
      const user = newUser()
      const mark = `loop${crypto.randomUUID().slice(0, 6)}`
      const { raws } = await send(user, `${mark} call:echo`, 'looper')
      const calls = [...messagesById(raws).values()].filter(
        (message) => (message as { recipient: string }).recipient === 'echo',
      )
      expect(calls).toHaveLength(2)
      // The replies' requests (the title's is not streamed).
      const requests = (await fake.requests()).filter(
        (sent) =>
          sent.body.stream === true &&
          sent.body.messages.some((message) => message.content?.includes(mark)),
      )
      expect(requests.map((request) => (request.body.tools ?? []).length > 0)).toEqual([
        true,
        true,
        false,
      ])
      expect(gpt4freeRead(raws).text).toStartWith('Tool results: ')
    })

    test('reasoning and calls together: thoughts, call, result, thoughts, answer', async () => {
      const user = newUser()
      const { raws, frames } = await send(user, 'call:echo', 'thinker')
      const read = gpt4freeRead(raws)
      expect(read.text).toBe('Tool results: call:echo')
      expect(read.reasoning).toBe('Thinking about it.Thinking about it.')
      const path = branch(await mappingOf(user, conversationIdOf(frames)))
      expect(path.map((message) => message.content.content_type)).toEqual([
        'text',
        'thoughts',
        'code',
        'execution_output',
        'thoughts',
        'text',
      ])
    })

    /** A send whose stream is read as it arrives, up to the add of its call message. */
    async function sendUntilCall(user: string, text: string) {
      const stream = sseReader(
        await post(t.app, '/backend-api/f/conversation', {
          user_id: user,
          action: 'next',
          model: 'tooled',
          messages: [textMessage(text, crypto.randomUUID())],
        }),
      )
      const seen = await stream.until(
        (frames) => frames.some((frame) => frame.data.includes('"content_type":"code"')),
        'the call message',
      )
      return { stream, conversation: conversationIdOf(seen) }
    }

    test('stop cancels the running call: the turn ends at once, interrupted, and is stored', async () => {
      const user = newUser()
      const { stream, conversation } = await sendUntilCall(user, 'call:hang')
      const stopped = await post(
        t.app,
        '/backend-api/stop_conversation',
        { conversation_id: conversation },
        { 'x-user-id': user },
      )
      expect(((await stopped.json()) as { stopped: boolean }).stopped).toBe(true)
      const frames = framesOf(await stream.rest())
      const tool = [...messagesById(frames.map((frame) => frame.raw)).values()].find(
        (message) => (message as { author: { role: string } }).author.role === 'tool',
      ) as { content: { text: string } } | undefined
      expect(tool?.content.text).toBe('The call was cancelled.')
      expect(frames.at(-1)?.data).toBe('[DONE]')
      const completion = frames.findLast((frame) => frame.data.includes('finish_details'))
      expect(JSON.stringify(dataOf(completion))).toContain('"type":"interrupted"')
      const path = branch(await mappingOf(user, conversation))
      expect(path.map((message) => message.content.content_type)).toEqual([
        'text',
        'code',
        'execution_output',
        'text',
      ])
    })

    test('a resume mid-call replays every item exactly once', async () => {
      const user = newUser()
      const { stream, conversation } = await sendUntilCall(user, 'call:hang')
      const status = (await (
        await get(t.app, `/backend-api/conversation/${conversation}/stream_status`, {
          'x-user-id': user,
        })
      ).json()) as { token: string; offset: number }
      const resumed = sseReader(
        await post(
          t.app,
          '/backend-api/f/conversation/resume',
          { conversation_id: conversation, offset: status.offset },
          { 'x-conduit-token': status.token },
        ),
      )
      const [original, rest] = await Promise.all([stream.rest(), resumed.rest()])
      const frames = framesOf(original)
      expect(original).toBe(
        frames
          .slice(0, status.offset)
          .map((frame) => frame.raw)
          .join('') + rest,
      )
      expect(frames.filter((frame) => frame.data.includes('"content_type":"code"'))).toHaveLength(1)
      expect(gpt4freeRead(framesOf(rest).map((frame) => frame.raw)).text).toContain(
        'did not answer within',
      )
    })
  },
)
