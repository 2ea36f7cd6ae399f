// The model's context (CONTRACT §4.7, §10): the last 20 finished messages of
// the branch a turn answers, from the top of the tree down to the message the
// reply answers. Kept as JSON in the cache list `chat:{id}:context`, which
// always holds the tail of one branch, and rebuilt from the database whenever
// the cache lost it or a turn answers another branch. Only the runner holding
// the conversation's lease touches the list, one turn at a time. A cache that
// is down answers as a miss (resilient-cache.ts): the context then comes from
// the database.
import type { Cache } from '../../storage/cache.ts'
import type { Db } from '../../storage/db.ts'
import type { StoredMessage } from '../messages.ts'
import { branchTo } from '../sql/tree-repository.ts'
import { CONTEXT_LENGTH, CONTEXT_TTL_SECONDS, contextKey } from './cache-keys.ts'

export interface ContextDeps {
  db: Db
  cache: Cache
  warn: (message: string, error: unknown) => void
}

// An entry names a message's files by id (its image pointers and attachments),
// never their bytes: the model request reads them (turn/attachments.ts).
const encode = (message: StoredMessage) =>
  JSON.stringify({
    id: message.id,
    role: message.role,
    content: message.content,
    create_time: message.createTime,
    ...(message.attachments ? { attachments: message.attachments } : {}),
  })

function decode(entry: string): StoredMessage | undefined {
  try {
    const value = JSON.parse(entry) as {
      id: string
      role: 'user' | 'assistant'
      content: StoredMessage['content']
      create_time: number
      attachments?: StoredMessage['attachments']
    }
    return {
      id: value.id,
      role: value.role,
      content: value.content,
      createTime: value.create_time,
      ...(value.attachments ? { attachments: value.attachments } : {}),
    }
  } catch {
    return undefined
  }
}

/**
 * The context of a turn whose reply answers message `answered`, oldest first,
 * with the list brought up to date with the turn's user messages (`inputs`,
 * already stored, each under its parent; none for a regenerated reply).
 *
 * The list is the tail of a branch, so it is this turn's branch exactly when
 * its newest entry is the message the turn's new messages follow: the parent
 * of the first input, or for a variant the message answered again. Otherwise
 * (missing, unreadable, another branch) it is rebuilt from the database. Once
 * it resolves, the list holds exactly the context (the reply may be pushed).
 */
export async function contextForTurn(
  deps: ContextDeps,
  conversationId: string,
  answered: string,
  inputs: readonly StoredMessage[],
): Promise<StoredMessage[]> {
  const key = contextKey(conversationId)
  const follows = inputs.length > 0 ? inputs[0]?.parentId : answered
  // A turn starting a new tree (first turn, or a send to client-created-root)
  // follows nothing: its context is its inputs, with no read of the list or the database.
  if (follows === null) return replaceContext(deps, key, inputs.slice(-CONTEXT_LENGTH))
  const cached = (await deps.cache.listAll(key)).map(decode)
  const isThisBranch =
    follows !== undefined &&
    cached.at(-1)?.id === follows &&
    cached.every((message) => message !== undefined)
  if (isThisBranch) {
    await deps.cache.listPush(key, inputs.map(encode), CONTEXT_LENGTH, CONTEXT_TTL_SECONDS)
    return [...(cached as StoredMessage[]), ...inputs].slice(-CONTEXT_LENGTH)
  }
  return replaceContext(
    deps,
    key,
    await branchTo(deps.db, conversationId, answered, CONTEXT_LENGTH),
  )
}

/** Makes the list exactly `context`, which it resolves with. */
async function replaceContext(
  deps: ContextDeps,
  key: string,
  context: StoredMessage[],
): Promise<StoredMessage[]> {
  await deps.cache.listReplace(key, context.map(encode), CONTEXT_TTL_SECONDS)
  return context
}

/**
 * Adds a stored reply to the list. A list the cache lost stays lost (the next
 * turn rebuilds it from the database) rather than restarting with the reply:
 * the push happens only onto a list that exists, in one step, so a list
 * dropped in between (a stop's forgetContext, a flush) cannot come back as
 * the reply alone, which the next turn would take for its whole context.
 */
export async function recordReply(
  deps: ContextDeps,
  conversationId: string,
  reply: StoredMessage,
): Promise<void> {
  await deps.cache.listPushIfPresent(
    contextKey(conversationId),
    [encode(reply)],
    CONTEXT_LENGTH,
    CONTEXT_TTL_SECONDS,
  )
}

/** Drops the list (a turn finished by someone other than its runner); the next turn rebuilds it. */
export async function forgetContext(deps: ContextDeps, conversationId: string): Promise<void> {
  await deps.cache.del(contextKey(conversationId))
}
