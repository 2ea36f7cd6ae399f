// The custom instructions an imported chatgpt.com conversation was held under
// (CONTRACT §16-§17): chatgpt.com stores them in the conversation as a hidden
// user message of content type `user_editable_context`, flagged
// `is_user_system_message`, with the user's own texts in its metadata's
// `user_context_message_data`. The message stays hidden in the tree; its texts
// become the conversation's instructions, the system text its turns send in
// place of the user's current ones (chatgpt.com applies instructions to the
// chats started under them).
import { instructionsText, MAX_INSTRUCTION_CHARS } from '../../instructions/instructions.ts'
import type { ImportedMessage } from './imported-message.ts'

/** The longest text of each of the content's two fields (chatgpt.com's preamble and the user's text). */
export const MAX_CONTEXT_FIELD_CHARS = 2 * MAX_INSTRUCTION_CHARS

const isInstructions = (message: ImportedMessage) =>
  message.metadata.is_user_system_message === true ||
  message.content.content_type === 'user_editable_context'

const textField = (fields: Record<string, unknown>, name: string) =>
  typeof fields[name] === 'string' ? (fields[name] as string) : ''

const charCount = (text: string) => Array.from(text).length

export type InstructionsRead =
  | { found: false }
  | { found: true; messageId: string; text: string | null; note?: string }

/**
 * The instructions of the first instructions message (parents first): the
 * user's texts from its metadata as custom instructions read
 * (instructions.ts), else its content's two texts as chatgpt.com wrote them
 * for the model. Texts past their limit are not used, with a note saying so;
 * empty ones leave the conversation without instructions.
 */
export function importedInstructions(messages: readonly ImportedMessage[]): InstructionsRead {
  const message = messages.find(isInstructions)
  if (!message) return { found: false }
  const data = message.metadata.user_context_message_data
  const fromData =
    typeof data === 'object' && data !== null && !Array.isArray(data)
      ? (data as Record<string, unknown>)
      : undefined
  const [first, second, limit] = fromData
    ? [
        textField(fromData, 'about_user_message'),
        textField(fromData, 'about_model_message'),
        MAX_INSTRUCTION_CHARS,
      ]
    : [
        textField(message.content, 'user_profile'),
        textField(message.content, 'user_instructions'),
        MAX_CONTEXT_FIELD_CHARS,
      ]
  if (charCount(first) > limit || charCount(second) > limit)
    return {
      found: true,
      messageId: message.id,
      text: null,
      note: `its custom instructions are longer than ${limit} characters: not used as the conversation's instructions`,
    }
  const text = fromData
    ? instructionsText({ enabled: true, aboutUser: first, aboutModel: second, otherFields: {} })
    : [first.trim(), second.trim()].filter((part) => part !== '').join('\n\n')
  return {
    found: true,
    messageId: message.id,
    text: text === undefined || text === '' ? null : text,
  }
}
