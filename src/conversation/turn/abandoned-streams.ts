// Ending the streams that a runner left open after storing their reply.
// lifecycle.ts stores the reply before it ends the stream, so that a client that
// saw [DONE] reads the stored state. A first turn asks the model for a title
// in between. A runner that died in that window (CONTRACT §13) leaves a stored
// reply and a log that never ends, and every reader of that log would wait
// for the log to expire, an hour later.
//
// The runner's sweep lists the logs left unfinished for longer than a lease
// and ends the ones whose reply is stored, as the runner would have:
// - the completion patch of the stored ending;
// - before it, an `interrupted` error item when the reply ended in error
//   (how it failed is not stored, and its stream was cut off);
// - the title of a first turn, as stored;
// - message_stream_complete and [DONE].
// It does so while holding the conversation's lease. A live runner still
// ending the turn holds that lease, so it is never overtaken, and the new
// fencing token shuts out a dead runner's late writes. Logs whose reply is
// still in progress are left to the runner or to the recovery of a dead one
// (lifecycle.ts recoverTurn). A log whose turn was never stored (its accepting process died
// before the insert) or was deleted is removed.
import type { ConversationLeases } from '../../state/conversation-leases.ts'
import { type StoredEnding, storedEndings } from '../sql/turn-repository.ts'
import { holdsTitle } from '../stream/encoding.ts'
import type { TurnDeps } from './deps.ts'
import { endStream, INTERRUPTED_DETAIL, type StreamEnding } from './lifecycle.ts'

/** Logs looked at per sweep, oldest first. */
const MAX_LOGS_PER_SWEEP = 500

/**
 * Ends the abandoned streams of stored replies. Resolves with the
 * conversations whose lease someone asked for while this held it: their
 * queued turns need a runner.
 */
export async function endAbandonedStreams(
  deps: Pick<TurnDeps, 'db' | 'logs' | 'warn'>,
  leases: ConversationLeases,
  /** The lease lifetime, and how long a log must have been open to be looked at (a lease, in the sweep). */
  { leaseMs, olderThanMs }: { leaseMs: number; olderThanMs: number },
): Promise<string[]> {
  const logs = await deps.logs.unfinished(olderThanMs, MAX_LOGS_PER_SWEEP)
  if (logs.length === 0) return []
  const stored = await storedEndings(deps.db, logs)
  const wanted: string[] = []
  for (const log of logs) {
    const ending = stored.get(`${log.conversationId}/${log.messageId}`)
    if (ending?.status === 'in_progress') continue
    const lease = await leases.acquire(log.conversationId, leaseMs)
    if (!lease) continue
    try {
      const info = await deps.logs.claim(log.messageId, lease.token)
      if (!info || info.finished) continue
      if (!ending) await deps.logs.remove(log.messageId)
      else {
        // A first turn's log may hold its title already (streamed as soon as it was known).
        const titled = ending.firstTurn && holdsTitle(await deps.logs.readAll(log.messageId))
        await endStream(deps.logs, log, lease.token, streamEnding(ending, titled))
      }
    } catch (error) {
      deps.warn('could not end an abandoned stream', error)
    } finally {
      if (await leases.release(lease).catch(() => true)) wanted.push(log.conversationId)
    }
  }
  return wanted
}

/** The last items a stored reply's stream owes, from how it was stored. */
function streamEnding(stored: StoredEnding, titleStreamed: boolean): StreamEnding {
  const finish = stored.finish ?? 'error'
  return {
    finish,
    ...(finish === 'error' ? { error: { code: 'interrupted', detail: INTERRUPTED_DETAIL } } : {}),
    ...(stored.firstTurn && !titleStreamed ? { title: stored.title } : {}),
  }
}
