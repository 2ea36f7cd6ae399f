// The conversation API (/backend-api) as an Elysia plugin: validates requests,
// resolves the user, and hands the work to the conversation service.
import { Elysia } from 'elysia'
import { DEFAULT_IMPORT_MAX_BYTES } from '../config-schema.ts'
import { invalid, tooLarge, unauthenticated } from '../errors.ts'
import type { Authenticator } from '../http/auth.ts'
import { handshakeRoutes } from './handshake-routes.ts'
import { type InputContent, readInputContent } from './input-content.ts'
import { instructionsRoutes } from './instructions/routes.ts'
import { managementRoutes } from './management/management-routes.ts'
import { transferRoutes } from './management/transfer-routes.ts'
import { reasoningEffortOf } from './model/reasoning-effort.ts'
import { modelsRoutes } from './models-routes.ts'
import { parseListQuery } from './reads/query-params.ts'
import {
  bearerAuth,
  claimedReader,
  conversationIdOf,
  IdentityHeaders,
  json,
  ResumeHeaders,
} from './route-helpers.ts'
import {
  ConversationDetail,
  ConversationList,
  errorResponseDocs,
  errorResponses,
  ListQuery,
  MAX_TEXT_CHARS,
  ResumeBody,
  SendBody,
  StopBody,
  StopResult,
  StreamStatus,
} from './schemas.ts'
import type { ConversationService } from './service.ts'
import { sseResponse } from './stream/sse-response.ts'
import { eventStreamResponse } from './stream/stream-schemas.ts'

export interface ConversationRoutesDeps {
  conversations: ConversationService
  auth: Authenticator
  keepaliveMs: number
  /** Largest import accepted (IMPORT_MAX_BYTES; its default when absent). */
  importMaxBytes?: number
}

/**
 * Rules the schema cannot say: who wrote each message (`role` or
 * `author.role`), what a variant names, what each part is (CONTRACT §20),
 * text limits and messages that say nothing. Resolves with each message's
 * content as it is to be stored.
 */
function checkSend(body: SendBody): InputContent[] {
  const { messages } = body
  let total = 0
  if (body.action === 'variant') {
    if (messages.length !== 1)
      throw invalid(
        'The field "messages" must hold exactly one message with action "variant": the user message to answer again.',
      )
    if (messages[0]?.id === undefined)
      throw invalid('The field "messages[0].id" is required with action "variant".')
  }
  const contents = messages.map((message, index) => {
    if (message.role === undefined && message.author?.role === undefined)
      throw invalid(`The field "messages[${index}].role" (or "author.role") is required.`)
    const read = readInputContent(message.content, message.metadata, index)
    const parts: readonly unknown[] = read.content.parts
    const texts = parts.filter((part): part is string => typeof part === 'string')
    // An image or a document says something on its own.
    if (read.fileIds.length === 0 && texts.every((part) => part.trim() === ''))
      throw invalid(`The field "messages[${index}].content.parts" must contain some text.`)
    for (const part of texts) total += part.length
    return read
  })
  if (total > MAX_TEXT_CHARS)
    throw tooLarge(`The messages hold more than ${MAX_TEXT_CHARS} characters of text.`)
  return contents
}

export function conversationRoutes({
  conversations,
  auth,
  keepaliveMs,
  importMaxBytes = DEFAULT_IMPORT_MAX_BYTES,
}: ConversationRoutesDeps) {
  return new Elysia({ name: 'conversation-api', prefix: '/backend-api' })
    .use(managementRoutes({ manage: conversations.manage, auth }))
    .use(modelsRoutes({ models: conversations.models, auth }))
    .use(instructionsRoutes({ instructions: conversations.instructions, auth }))
    .use(handshakeRoutes({ auth, conduitToken: conversations.conduitToken }))
    .use(transferRoutes({ transfer: conversations.transfer, auth, importMaxBytes }))
    .post(
      '/f/conversation',
      async ({ body, request, set }) => {
        // Identity as the body names it, else as reads name it (CONTRACT §9).
        const claimed = body.user_id ?? request.headers.get('x-user-id') ?? undefined
        // The request log's id for this request (request-log.ts), for the turn's log lines.
        const requestId = set.headers['x-request-id']
        const userId = await auth.userOf(request, claimed)
        const contents = checkSend(body)
        const stream = await conversations.send({
          userId,
          conversationId: body.conversation_id?.toLowerCase() ?? undefined,
          messages: body.messages.map((message, index) => ({
            id: message.id,
            ...(contents[index] as InputContent),
          })),
          temperature: body.metadata?.temperature,
          model: body.model,
          reasoningEffort: reasoningEffortOf(body.thinking_effort, body.reasoning_effort),
          action: body.action ?? 'next',
          parentMessageId: body.parent_message_id,
          requestId: typeof requestId === 'string' ? requestId : undefined,
        })
        return sseResponse(stream, keepaliveMs)
      },
      {
        body: SendBody,
        headers: IdentityHeaders,
        detail: {
          ...bearerAuth,
          tags: ['conversation'],
          summary: 'Send messages and stream the reply',
          responses: {
            200: eventStreamResponse,
            ...errorResponseDocs(401, 403, 404, 409, 413, 422, 429),
          },
        },
      },
    )
    .post(
      '/f/conversation/resume',
      async ({ body, request }) => {
        const token = request.headers.get('x-conduit-token')
        if (!token) throw unauthenticated('The x-conduit-token header is required.')
        const userId = await auth.optionalUserOf(
          request,
          body.user_id ?? request.headers.get('x-user-id') ?? undefined,
        )
        const stream = await conversations.resume({
          token,
          conversationId: body.conversation_id.toLowerCase(),
          offset: body.offset ?? 0,
          userId,
        })
        return sseResponse(stream, keepaliveMs)
      },
      {
        body: ResumeBody,
        headers: ResumeHeaders,
        detail: {
          ...bearerAuth,
          tags: ['conversation'],
          summary: 'Resume a reply stream from an item offset',
          responses: { 200: eventStreamResponse, ...errorResponseDocs(401, 404, 422) },
        },
      },
    )
    .get(
      '/conversations',
      async ({ query, request, set }) => {
        const page = parseListQuery(query)
        const userId = await auth.userOf(request, claimedReader(request, query.user_id))
        return json(set, await conversations.list(userId, page))
      },
      {
        query: ListQuery,
        headers: IdentityHeaders,
        response: { 200: ConversationList, ...errorResponses(401, 403, 422) },
        detail: { ...bearerAuth, tags: ['conversation'], summary: "List the user's conversations" },
      },
    )
    .get(
      '/conversation/:conversation_id',
      async ({ params, query, request, set }) => {
        const userId = await auth.userOf(request, claimedReader(request, query.user_id))
        return json(set, await conversations.detail(userId, conversationIdOf(params)))
      },
      {
        headers: IdentityHeaders,
        response: { 200: ConversationDetail, ...errorResponses(401, 403, 404, 422) },
        detail: { ...bearerAuth, tags: ['conversation'], summary: 'Read one conversation' },
      },
    )
    .get(
      '/conversation/:conversation_id/stream_status',
      async ({ params, query, request }) => {
        const userId = await auth.userOf(request, claimedReader(request, query.user_id))
        return conversations.streamStatus(userId, conversationIdOf(params))
      },
      {
        headers: IdentityHeaders,
        response: { 200: StreamStatus, ...errorResponses(401, 403, 404, 422) },
        detail: {
          ...bearerAuth,
          tags: ['conversation'],
          summary: 'Whether a reply streams now, with a fresh resume token and offset',
        },
      },
    )
    .post(
      '/stop_conversation',
      async ({ body, query, request }) => {
        // Identity as for reads (header, then query), and the body's user_id as a send names it.
        const claimed = claimedReader(request, query.user_id) ?? body.user_id
        const userId = await auth.userOf(request, claimed)
        return conversations.stop(userId, body.conversation_id.toLowerCase())
      },
      {
        body: StopBody,
        headers: IdentityHeaders,
        response: { 200: StopResult, ...errorResponses(401, 403, 404, 422) },
        detail: {
          ...bearerAuth,
          tags: ['conversation'],
          summary: "Stop the conversation's running reply, on whichever instance runs it",
        },
      },
    )
}
