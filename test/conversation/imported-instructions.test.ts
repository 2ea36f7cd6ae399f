// The instructions an imported chatgpt.com conversation keeps (CONTRACT §16-§17):
// read from its hidden user_editable_context message - the user's texts from
// its metadata, else the content's two texts - and none when it has no such
// message; texts past their limit are reported and not used.
import { describe, expect, test } from 'bun:test'
import { instructionsText } from '../../src/conversation/instructions/instructions.ts'
import { readConversation } from '../../src/conversation/management/import/chatgpt-conversation.ts'
import { MAX_CONTEXT_FIELD_CHARS } from '../../src/conversation/management/import/imported-instructions.ts'

const NOW = 1_764_000_000.5

/** A conversation of a root, an instructions message with `content` and `metadata`, and a question. */
function conversationWith(content: Record<string, unknown>, metadata: Record<string, unknown>) {
  const message = (id: string, role: string, body: Record<string, unknown>, meta = {}) => ({
    id,
    author: { role },
    content: body,
    metadata: meta,
  })
  return {
    id: 'source-1',
    title: 'With instructions',
    mapping: {
      root: { id: 'root', message: null, parent: null, children: ['ctx'] },
      ctx: {
        id: 'ctx',
        message: message(
          'ctx',
          'user',
          { content_type: 'user_editable_context', ...content },
          { is_visually_hidden_from_conversation: true, ...metadata },
        ),
        parent: 'root',
        children: ['q'],
      },
      q: {
        id: 'q',
        message: message('q', 'user', { content_type: 'text', parts: ['hello'] }),
        parent: 'ctx',
        children: [],
      },
    },
  }
}

function read(value: unknown) {
  const result = readConversation(value, 0, NOW)
  if (!result.kept) throw new Error(`not kept: ${result.reason}`)
  return result.conversation
}

describe("an imported conversation's instructions", () => {
  test("are the user's texts of the message's metadata, as custom instructions read", () => {
    const conversation = read(
      conversationWith(
        { user_profile: 'preamble: I fly kites.', user_instructions: 'preamble: be brief.' },
        {
          is_user_system_message: true,
          user_context_message_data: {
            about_user_message: 'I fly kites.',
            about_model_message: 'Be brief.',
          },
        },
      ),
    )
    expect(conversation.instructions).toBe(
      instructionsText({
        enabled: true,
        aboutUser: 'I fly kites.',
        aboutModel: 'Be brief.',
        otherFields: {},
      }) as string,
    )
    // The message stays in the tree, hidden.
    expect(conversation.messages.find((message) => message.id === 'ctx')?.hidden).toBe(true)
  })

  test("without the metadata's texts, are the content's two texts as chatgpt.com wrote them", () => {
    const conversation = read(
      conversationWith({ user_profile: 'I fly kites.', user_instructions: 'Be brief.' }, {}),
    )
    expect(conversation.instructions).toBe('I fly kites.\n\nBe brief.')
  })

  test('are none without an instructions message, or when its texts are empty', () => {
    const plain = conversationWith({}, {})
    plain.mapping.ctx.message.content = { content_type: 'text', parts: ['just text'] }
    plain.mapping.ctx.message.metadata = {}
    expect(read(plain).instructions).toBeNull()
    expect(
      read(conversationWith({ user_profile: ' ', user_instructions: '' }, {})).instructions,
    ).toBeNull()
  })

  test('past their limit, are not used, and the report says why; hostile values are not texts', () => {
    const long = 'k'.repeat(MAX_CONTEXT_FIELD_CHARS + 1)
    const conversation = read(conversationWith({ user_profile: long, user_instructions: 'x' }, {}))
    expect(conversation.instructions).toBeNull()
    expect(conversation.notes).toContainEqual({
      message_id: 'ctx',
      reason: `its custom instructions are longer than ${MAX_CONTEXT_FIELD_CHARS} characters: not used as the conversation's instructions`,
    })
    const hostile = read(
      conversationWith(
        { user_profile: { toString: 'no' }, user_instructions: ['a'] },
        { is_user_system_message: true, user_context_message_data: ['not', 'an object'] },
      ),
    )
    expect(hostile.instructions).toBeNull()
  })
})
