// The conversation service: what the HTTP routes call. It wires the actor
// registry, turns, resumable logs and cached reads together; it takes its
// dependencies as parameters and knows nothing of HTTP.
import { randomUUID } from 'node:crypto'
import { notFound, unauthorized, validationFailed } from '../errors.ts'
import type { Cache } from '../storage/cache.ts'
import type { Db } from '../storage/db.ts'
import type { ListPage } from './list-cache.ts'
import type { ModelProvider } from './model/provider.ts'
import { conversationDetail, conversationList } from './reads.ts'
import { ActorRegistry } from './registry.ts'
import { createResumeTokens } from './resume-token.ts'
import { acceptTurn, runReply, type SendInput } from './turn.ts'
import type { TurnLog } from './turn-log.ts'
import { TurnLogs } from './turn-logs.ts'

export interface ConversationServiceOptions {
  db: Db
  cache: Cache
  model: ModelProvider
  resumeTokenSecret: string
  actorIdleMs: number
  maxActors: number
  resumeRetentionMs: number
  newId?: () => string
  warn?: (message: string, error: unknown) => void
}

export interface SendRequest {
  userId: string
  /** Absent: a new conversation. */
  conversationId?: string
  messages: { id?: string; parts: string[] }[]
  temperature?: number
}

/** A stream to answer with: the turn's log read from an offset. */
export interface TurnStream {
  log: TurnLog
  offset: number
}

export interface ResumeRequest {
  token: string
  conversationId: string
  offset: number
  /** The caller's identity when they gave one; must match the token's user. */
  userId: string | undefined
}

export type ConversationService = ReturnType<typeof createConversationService>

const defaultWarn = (message: string, error: unknown) =>
  console.warn(JSON.stringify({ level: 'warn', msg: message, error: String(error) }))

export function createConversationService(options: ConversationServiceOptions) {
  const warn = options.warn ?? defaultWarn
  const newId = options.newId ?? randomUUID
  const logs = new TurnLogs(options.resumeRetentionMs)
  const registry = new ActorRegistry({ idleMs: options.actorIdleMs, maxActors: options.maxActors })
  const stopping = new AbortController()
  const deps = {
    db: options.db,
    cache: options.cache,
    model: options.model,
    tokens: createResumeTokens(options.resumeTokenSecret),
    logs,
    newId,
    warn,
  }

  return {
    /**
     * Queues a turn on the conversation's actor and resolves with its stream
     * once the user messages are stored; rejects with 404/409/429 before that.
     */
    send(request: SendRequest): Promise<TurnStream> {
      const input: SendInput = {
        userId: request.userId,
        conversationId: request.conversationId ?? newId(),
        isNew: request.conversationId === undefined,
        messages: request.messages.map((message) => ({
          id: message.id ?? newId(),
          parts: message.parts,
        })),
        temperature: request.temperature,
      }
      const actor = registry.get(input.conversationId)
      return new Promise<TurnStream>((resolve, reject) => {
        actor
          .enqueue(async () => {
            const turn = await acceptTurn(deps, input).catch((error: unknown) => {
              reject(error)
              return undefined
            })
            if (!turn) return
            resolve({ log: turn.log, offset: 0 })
            await runReply(deps, turn, stopping.signal)
          })
          .catch((error: unknown) => warn('turn crashed', error))
      })
    },

    /** The stream of a turn from an offset, live or finished (CONTRACT §4.4). */
    async resume(request: ResumeRequest): Promise<TurnStream> {
      const claims = await deps.tokens.verify(request.token)
      if (claims.conversationId !== request.conversationId)
        throw unauthorized('The resume token belongs to another conversation.')
      if (request.userId !== undefined && request.userId !== claims.userId)
        throw unauthorized('The resume token belongs to another user.')
      const log = logs.get(claims.messageId)
      if (!log || log.conversationId !== claims.conversationId)
        throw notFound('This stream is no longer available.')
      if (log.finishedAt !== undefined && request.offset > log.length)
        throw validationFailed(
          `The field "offset" is past the end of the stream (${log.length} items).`,
        )
      return { log, offset: request.offset }
    },

    list: (userId: string, page: ListPage) => conversationList(deps, userId, page),

    detail: (userId: string, conversationId: string) =>
      conversationDetail(deps, userId, conversationId),

    /** Resolves when every queued turn has finished (shutdown, tests). */
    whenIdle: () => registry.whenIdle(),

    /** Waits up to graceMs for running turns, then cancels what is left. */
    async close(graceMs = 0): Promise<void> {
      const idle = registry.whenIdle()
      const timeout = new Promise((resolve) => setTimeout(resolve, graceMs).unref?.())
      await Promise.race([idle, timeout])
      stopping.abort()
      await idle
      registry.close()
      logs.close()
    },
  }
}
