// The conversation service: what the HTTP routes call. It accepts sends onto
// the turn runner, serves turn logs to streams and resumes, stops turns and
// reports stream status, and answers cached reads. It takes its dependencies
// as parameters and knows nothing of HTTP.
import { randomUUID } from 'node:crypto'
import { busy, invalid, notFound, unauthenticated } from '../errors.ts'
import type { ConversationLeases } from '../state/conversation-leases.ts'
import type { StopChannel } from '../state/stop-channel.ts'
import type { TurnLogStore } from '../state/turn-log/turn-log-store.ts'
import type { Cache } from '../storage/cache.ts'
import type { Db } from '../storage/db.ts'
import { createConduitTokens } from './conduit-token.ts'
import { createInstructionsStore } from './instructions/store.ts'
import { exportStream } from './management/export/export-stream.ts'
import { importConversations } from './management/import/import-conversations.ts'
import { createManagement } from './management/management.ts'
import { type ModelCatalogue, singleModelCatalogue } from './model/catalogue.ts'
import type { ModelProvider } from './model/provider.ts'
import type { ListPage } from './reads/list-cache.ts'
import { createListPages } from './reads/list-pages.ts'
import { conversationDetail, conversationList } from './reads/reads.ts'
import { createShares } from './share/shares.ts'
import { isOwnConversation } from './sql/conversations-repository.ts'
import { nextTurn, requestStop, runningTurn, storedReply } from './sql/turn-repository.ts'
import { createResumeTokens } from './stream/resume-token.ts'
import type { TurnStream } from './stream/sse-response.ts'
import { type AttachmentFiles, checkAttachments } from './turn/attachments.ts'
import type { TurnDeps } from './turn/deps.ts'
import { chooseModel } from './turn/model-choice.ts'
import { type ConversationObserver, silentObserver } from './turn/observer.ts'
import { createReplyCheckpoints } from './turn/reply-checkpoints.ts'
import { createTurnRequestIds } from './turn/request-ids.ts'
import { isRetriedSend, originalOfRetry } from './turn/retried-send.ts'
import { createTurnRunner, type LeftTurn } from './turn/runner.ts'
import type { Send } from './turn/send.ts'
import { readTurnStream } from './turn/stream-reader.ts'
import type { TurnTools } from './turn/tool-loop.ts'

export interface ConversationServiceOptions {
  db: Db
  cache: Cache
  /** The models replies come from (CONTRACT §15); or `model`, one provider as the whole catalogue. */
  models?: ModelCatalogue
  model?: ModelProvider
  resumeTokenSecret: string
  logs: TurnLogStore
  leases: ConversationLeases
  stops: StopChannel
  /** Lease lifetime: a dead instance's turns are taken over after about this long. */
  leaseMs: number
  /** Most conversations this process runs turns for at once; past it a send is refused as `busy`. */
  maxConversations: number
  /** How often a streaming reply's row is touched (its heartbeat) and, with in-process logs, its text saved; default a third of a lease, at most 1 s. */
  checkpointMs?: number
  /** How long a running turn, and then its readers, wait for a store that failed mid-turn (default 30 s). */
  storeRecoveryMs?: number
  /** How often a reader whose log is silent asks whether it still answers (default 1 s). */
  readerCheckMs?: number
  /** How long a delete waits for the turns it stopped to end (default 5 s). */
  deleteStopWaitMs?: number
  newId?: () => string
  warn?: (message: string, error: unknown) => void
  /** Told of turns and streams (logs, metrics); silent when absent. */
  observer?: ConversationObserver
  /** The users' uploaded files (CONTRACT §20); without them a send naming a file is a 404. */
  files?: AttachmentFiles
  /** How long a turn waits to read its files before it ends with an error (default 10 s). */
  fileReadMs?: number
  /** The tools offered to catalogue models with `tools: true` (CONTRACT §21); none when absent. */
  tools?: TurnTools
  /** TITLE_MODEL: the catalogue model that names conversations; absent: the reply's model. */
  titleModel?: string
  /** How long a reply's ending waits for a title model still at work (2 s when absent). */
  titleWaitMs?: number
}

export interface ResumeRequest {
  token: string
  conversationId: string
  offset: number
  /** The caller's identity when they gave one; must match the token's user. */
  userId: string | undefined
}

export type StreamStatus =
  | { conversation_id: string; status: 'NOT_STREAMING'; streaming: false }
  | {
      conversation_id: string
      status: 'IS_STREAMING'
      streaming: true
      message_id: string
      token: string
      offset: number
    }

export type ConversationService = ReturnType<typeof createConversationService>

/**
 * When a send refused as `busy` may come back: a turn of the local model ends within a
 * few seconds, so a slot is likely free again by then.
 */
export const CAPACITY_RETRY_AFTER_SECONDS = 2

export function createConversationService(options: ConversationServiceOptions) {
  const warn = options.warn ?? (() => {})
  const requestIds = createTurnRequestIds()
  const observer = requestIds.observing(options.observer ?? silentObserver)
  const newId = options.newId ?? randomUUID
  const { db, logs } = options
  const storeRecoveryMs = options.storeRecoveryMs ?? 30_000
  /** Aborted once the runner has closed: readers still open end with their own last items. */
  const stopping = new AbortController()
  const readerOptions = {
    // Past the runner's own wait, so the runner's ending is what readers get when there is one.
    recoveryMs: storeRecoveryMs + options.leaseMs,
    checkMs: options.readerCheckMs ?? 1_000,
    stopping: stopping.signal,
    storedReply: (turn: { conversationId: string; messageId: string }) =>
      storedReply(db, turn.conversationId, turn.messageId),
  }
  let openReaders = 0
  let readersGone: (() => void) | undefined
  const models = options.models ?? (options.model && singleModelCatalogue(options.model))
  if (!models) throw new Error('createConversationService: models (or a model) are required')
  const instructions = createInstructionsStore({ db, cache: options.cache, warn })
  /** Aborted when close() stops the turns still running: their endings stop waiting for the database. */
  const shutdown = new AbortController()
  const deps: TurnDeps = {
    shutdown: shutdown.signal,
    db,
    cache: options.cache,
    models,
    tokens: createResumeTokens(options.resumeTokenSecret),
    logs,
    newId,
    warn,
    observer,
    checkpoints: createReplyCheckpoints(
      db,
      options.checkpointMs ?? Math.max(10, Math.min(1_000, Math.floor(options.leaseMs / 3))),
      warn,
      !logs.durable,
    ),
    storeRecoveryMs,
    files: options.files,
    fileReadMs: options.fileReadMs ?? 10_000,
    ...(options.tools ? { tools: options.tools } : {}),
    titleModel: options.titleModel,
    titleWaitMs: options.titleWaitMs,
  }
  const reads = { ...deps, listPages: createListPages(), modelSlug: models.defaultModel.slug }
  const runner = createTurnRunner({
    ...deps,
    stopTurns: shutdown,
    requestIds,
    leases: options.leases,
    stops: options.stops,
    leaseMs: options.leaseMs,
  })

  const streamOf = (
    turn: { conversationId: string; messageId: string },
    offset: number,
  ): TurnStream => ({
    read: (signal) => observed(readTurnStream(logs, turn, offset, signal, readerOptions)),
  })

  /** A stream's items, counted for the observer (and for shutdown) while it is open. */
  async function* observed(
    batches: AsyncGenerator<readonly string[]>,
  ): AsyncGenerator<readonly string[]> {
    observer.streamOpened()
    openReaders++
    try {
      for await (const batch of batches) {
        observer.streamItems(batch.length)
        yield batch
      }
    } finally {
      observer.streamClosed()
      if (--openReaders === 0) readersGone?.()
    }
  }

  let closing: Promise<LeftTurn[]> | undefined

  async function requireOwn(userId: string, conversationId: string) {
    if (!(await isOwnConversation(db, conversationId, userId)))
      throw notFound('Conversation not found.')
  }

  return {
    /**
     * Accepts a send (`not_found`/`conflict`/`invalid` before any stream) and answers with its turn's
     * stream from the first item; the turn runs wherever the conversation's
     * lease is held, after the turns accepted before it.
     */
    async send(send: Send): Promise<TurnStream> {
      if (runner.size >= options.maxConversations)
        throw busy(
          'The server is busy with too many conversations; try again shortly.',
          CAPACITY_RETRY_AFTER_SECONDS,
        )
      // An unknown model is refused before anything is stored.
      const choice = await chooseModel(deps, {
        requested: send.model,
        conversationId: send.conversationId,
        userId: send.userId,
      })
      // So are files that are not the sender's, and images to a model without vision.
      if (send.action === 'next')
        await checkAttachments(options.files, send.userId, send.messages, choice.model)
      const turn = await runner
        .accept(send, choice)
        // A retried send starts nothing: it answers with its original's stream (CONTRACT §14).
        .catch((refusal: unknown) => originalOfRetry(deps, send, refusal))
      return streamOf(turn, 0)
    },

    /**
     * Whether a raw send body repeats a send of this user whose stream is kept
     * (CONTRACT §14): the sends limit lets such a retry through, as it starts nothing.
     */
    isRetriedSend: (userId: string, body: unknown) => isRetriedSend(deps, userId, body),

    /** The stream of a turn from an offset, live or finished, from any instance (CONTRACT §4.4). */
    async resume(request: ResumeRequest): Promise<TurnStream> {
      const claims = await deps.tokens.verify(request.token)
      if (claims.conversationId !== request.conversationId)
        throw unauthenticated('The resume token belongs to another conversation.')
      if (request.userId !== undefined && request.userId !== claims.userId)
        throw unauthenticated('The resume token belongs to another user.')
      const info = await logs.info(claims.messageId)
      if (!info || info.conversationId !== claims.conversationId || info.userId !== claims.userId)
        throw notFound('This stream is no longer available.')
      if (info.finished && request.offset > info.length)
        throw invalid(`The field "offset" is past the end of the stream (${info.length} items).`)
      return streamOf(claims, request.offset)
    },

    /**
     * Stops the conversation's current turn wherever it runs (CONTRACT §12):
     * the one streaming now, or the one about to (its stream has started, its
     * runner has not claimed it yet). The stop is recorded on the turn, for a
     * runner that claims it later, and sent to the one running it now.
     */
    async stop(userId: string, conversationId: string) {
      await requireOwn(userId, conversationId)
      const turn = await nextTurn(db, conversationId)
      if (!turn || !(await requestStop(db, turn))) return { stopped: false as const }
      await options.stops.publish({ conversationId, messageId: turn.messageId })
      return { stopped: true as const, message_id: turn.messageId }
    },

    /** Whether a turn streams now, with what a reloaded page needs to resume it (CONTRACT §12). */
    async streamStatus(userId: string, conversationId: string): Promise<StreamStatus> {
      await requireOwn(userId, conversationId)
      const idle = {
        conversation_id: conversationId,
        status: 'NOT_STREAMING' as const,
        streaming: false as const,
      }
      const turn = (await runningTurn(db, conversationId)) ?? (await nextTurn(db, conversationId))
      const info = turn && (await logs.info(turn.messageId))
      if (!turn || !info || info.finished) return idle
      return {
        conversation_id: conversationId,
        status: 'IS_STREAMING',
        streaming: true,
        message_id: turn.messageId,
        token: deps.tokens.sign({ userId, conversationId, messageId: turn.messageId }),
        offset: info.length,
      }
    },

    list: (userId: string, page: ListPage) => conversationList(reads, userId, page),

    detail: (userId: string, conversationId: string) =>
      conversationDetail(reads, userId, conversationId),

    /** Rename, archive, delete (stopping running turns first), search, feedback (CONTRACT §11). */
    manage: createManagement({
      ...deps,
      stops: options.stops,
      stopWaitMs: options.deleteStopWaitMs ?? 5_000,
    }),

    /** The models replies come from (GET /models). */
    models,

    /** Users' custom instructions (GET / POST /user_system_messages). */
    instructions,

    /** A conduit token for the user, as chatgpt.com's prepare hands out (CONTRACT §17). */
    conduitToken: createConduitTokens(options.resumeTokenSecret),

    /** Shared links to a branch of a conversation, and what their readers see (CONTRACT §23). */
    shares: createShares({ db, newId, modelSlug: models.defaultModel.slug }),

    /** The user's history out and in, as chatgpt.com's conversations.json (CONTRACT §17). */
    transfer: {
      export: (userId: string, archived: boolean | undefined) =>
        exportStream({ db, modelSlug: models.defaultModel.slug, warn }, { userId, archived }),
      import: (userId: string, file: AsyncIterable<Uint8Array>) =>
        importConversations({ db, cache: options.cache, newId, warn }, userId, file),
    },

    /**
     * Starts looking for turns whose runner died (a crashed process, another
     * instance): the entry point calls it once the service may take traffic.
     */
    startRecovery: () => runner.startSweeping(),

    /** Turns running or starting here: admission control's count (http/admission.ts RunningTurns). */
    running: () => runner.running,

    /** Resolves when this process runs no turn (tests). */
    whenIdle: () => runner.whenIdle(),

    /**
     * Waits up to graceMs for running turns, then stops what is left (stored
     * as interrupted) and waits up to stopMs for that; then every stream still
     * open ends with its own last items (stream-reader.ts), waited for up to
     * stopMs. Resolves with the turns still running, left for a takeover.
     * Called again, it answers as the first call.
     */
    close: (graceMs = 0, stopMs = 1_000): Promise<LeftTurn[]> => {
      closing ??= (async () => {
        const left = await runner.close(graceMs, stopMs)
        stopping.abort()
        if (openReaders > 0)
          await new Promise<void>((resolve) => {
            readersGone = resolve
            setTimeout(resolve, stopMs).unref?.()
          })
        deps.checkpoints?.close()
        return left
      })()
      return closing
    },
  }
}
