// One turn of a conversation, run inside its actor. Accepting stores the user
// messages (the point where a send can still fail with a plain HTTP error);
// the reply then streams into the turn log and is stored before the log ends,
// whether or not anyone is still listening.
import type { Cache } from '../storage/cache.ts'
import type { Db } from '../storage/db.ts'
import { historyKey, listKey } from './cache-keys.ts'
import { appendToContext } from './context.ts'
import {
  appendItem,
  assistantAddItem,
  type Completion,
  completionItem,
  deltaEncodingItem,
  doneItem,
  encodeItem,
  errorItem,
  firstTokenMarkerItem,
  inputMessageItem,
  resumeTokenItem,
  type StreamItem,
  streamCompleteItem,
} from './encoding.ts'
import {
  assistantStartMessage,
  type StoredMessage,
  textOf,
  titleFrom,
  unixSeconds,
  userStreamMessage,
} from './messages.ts'
import { ModelError, type ModelProvider } from './model/provider.ts'
import {
  createConversation,
  ensureUser,
  insertMessages,
  lockOwnConversation,
} from './repository.ts'
import type { ResumeTokens } from './resume-token.ts'
import { TurnLog } from './turn-log.ts'
import type { TurnLogs } from './turn-logs.ts'

export interface TurnDeps {
  db: Db
  cache: Cache
  model: ModelProvider
  tokens: ResumeTokens
  logs: TurnLogs
  newId: () => string
  warn: (message: string, error: unknown) => void
}

export interface SendInput {
  userId: string
  conversationId: string
  /** True when the send creates the conversation. */
  isNew: boolean
  /** Input messages, each with its id already chosen. */
  messages: { id: string; parts: string[] }[]
  temperature?: number
}

export interface AcceptedTurn {
  input: SendInput
  stored: StoredMessage[]
  assistantId: string
  assistantCreateTime: number
  log: TurnLog
}

async function invalidate(deps: TurnDeps, conversationId: string, userId: string) {
  await deps.cache
    .del(historyKey(conversationId), listKey(userId))
    .catch((error) => deps.warn('could not invalidate cached reads', error))
}

/** Stores the user messages and opens the turn's log; throws 404/409 before any stream. */
export async function acceptTurn(deps: TurnDeps, input: SendInput): Promise<AcceptedTurn> {
  const { conversationId, userId } = input
  const stored: StoredMessage[] = input.messages.map((message) => ({
    id: message.id,
    role: 'user',
    content: { content_type: 'text', parts: message.parts },
    createTime: unixSeconds(),
  }))
  const first = stored[0]
  if (!first) throw new Error('acceptTurn: a send needs at least one message')
  await deps.db.transaction(async (tx) => {
    await ensureUser(tx, userId)
    if (input.isNew)
      await createConversation(
        tx,
        conversationId,
        userId,
        titleFrom(textOf(first.content)),
        new Date(first.createTime * 1000),
      )
    else await lockOwnConversation(tx, conversationId, userId)
    await insertMessages(tx, conversationId, stored, 'finished_successfully')
  })
  await invalidate(deps, conversationId, userId)

  const assistantId = deps.newId()
  const assistantCreateTime = unixSeconds()
  const log = new TurnLog(conversationId, assistantId, userId)
  const token = await deps.tokens.sign({ userId, conversationId, messageId: assistantId })
  const parentId = (stored.at(-1) as StoredMessage).id
  const items: StreamItem[] = [
    deltaEncodingItem(),
    resumeTokenItem(token, conversationId),
    ...stored.map((message) => inputMessageItem(userStreamMessage(message), conversationId)),
    assistantAddItem(
      assistantStartMessage(assistantId, assistantCreateTime, deps.model.slug, parentId),
      conversationId,
    ),
  ]
  for (const item of items) log.append(encodeItem(item))
  deps.logs.add(log)
  return { input, stored, assistantId, assistantCreateTime, log }
}

/** Streams the model's reply into the log, stores it, and ends the log. Never throws. */
export async function runReply(
  deps: TurnDeps,
  turn: AcceptedTurn,
  signal?: AbortSignal,
): Promise<void> {
  const { log, assistantId, input } = turn
  const { conversationId, userId } = input
  const emit = (item: StreamItem) => log.append(encodeItem(item))
  let text = ''
  let failure: { detail: string; code: 'model_error' | 'storage_error' } | undefined
  try {
    const context = await appendToContext(deps, conversationId, turn.stored)
    const messages = context.map((message) => ({
      role: message.role,
      content: textOf(message.content),
    }))
    for await (const chunk of deps.model.stream({
      messages,
      temperature: input.temperature,
      signal,
    })) {
      if (chunk === '') continue
      if (text === '') emit(firstTokenMarkerItem(conversationId, assistantId))
      text += chunk
      emit(appendItem(chunk))
    }
  } catch (error) {
    if (!(error instanceof ModelError)) deps.warn('turn failed before the reply finished', error)
    const detail = error instanceof ModelError ? error.detail : 'The model failed to answer.'
    failure = { detail, code: 'model_error' }
  }
  const status: Completion = failure ? 'finished_partial_completion' : 'finished_successfully'
  const reply: StoredMessage = {
    id: assistantId,
    role: 'assistant',
    content: { content_type: 'text', parts: [text] },
    createTime: turn.assistantCreateTime,
  }
  let saved = false
  try {
    await deps.db.transaction((tx) => insertMessages(tx, conversationId, [reply], status))
    saved = true
  } catch (error) {
    deps.warn('could not store the reply', error)
    failure ??= { detail: 'The reply could not be saved.', code: 'storage_error' }
  }
  if (saved) {
    await invalidate(deps, conversationId, userId)
    await appendToContext(deps, conversationId, [reply]).catch((error) =>
      deps.warn('could not update the context list', error),
    )
  }
  if (failure) emit(errorItem(conversationId, assistantId, failure.detail, failure.code))
  emit(completionItem(failure ? 'finished_partial_completion' : 'finished_successfully'))
  emit(streamCompleteItem(conversationId))
  emit(doneItem())
  log.close()
}
