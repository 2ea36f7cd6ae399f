// A send (CONTRACT §9, §15, §20): the one shape a send has from the route,
// which reads it from the request body, to the stored turn - the service,
// the runner, acceptance and the retry check all take it as it is.
import type { InputContent } from '../input-content.ts'
import type { MessageType } from '../messages.ts'

/** One input message: its content and attachments as input-content.ts read them. */
export type SendMessage = { id?: string } & InputContent

export interface Send {
  userId: string
  /** Absent: a new conversation. */
  conversationId?: string
  /** For a variant: exactly one, naming the stored user message to answer again (its content unused). */
  messages: SendMessage[]
  temperature?: number
  /** The send's `model`: a slug, or `auto` / empty / absent for the conversation's model. */
  model?: string | null
  /** OpenAI's reasoning effort the send asked for (model/reasoning-effort.ts). */
  reasoningEffort?: string
  /** `next` answers the messages; `variant` answers again the stored user message named. */
  action: MessageType
  /** Absent (the current node), `client-created-root`, or a message id of the conversation. */
  parentMessageId?: string
  /** The send's request id (the access log's), for the turn's own log lines. */
  requestId?: string
}
