// The turn runner of one process. For each conversation with queued turns it
// takes the conversation's lease (at most one runner per conversation across
// every instance), runs the queued turns one at a time in the order they were
// accepted (the in-progress rows, by seq), and gives the lease back when the
// queue is empty. It renews its leases, aborts a turn on a stop request or on
// losing the lease, sweeps for conversations whose runner died (and for the
// streams one left open after storing its reply: turn/abandoned-streams.ts),
// and on shutdown lets running turns finish within a grace period, then stops
// them.
//
// Looking for work costs one statement per turn: claiming the next turn also
// tells whether more follow. A turn queued after that is noticed without
// asking the database each time: one accepted here marks the running drive
// `pending`; one accepted on another instance finds the lease held, which
// marks the lease wanted and makes release() say so. Only then does the
// runner look again after giving the lease back.
import type { ConversationLeases, Lease } from '../../state/conversation-leases.ts'
import type { StopChannel } from '../../state/stop-channel.ts'
import type { StoredMessage, Turn } from '../messages.ts'
import {
  claimNextTurn,
  conversationsWithTurns,
  nextTurn,
  type TurnClaim,
} from '../sql/turn-repository.ts'
import { endAbandonedStreams } from './abandoned-streams.ts'
import { type AcceptedTurn, acceptTurn } from './accept.ts'
import type { TurnDeps } from './deps.ts'
import { type AbortReason, runTurn, type TurnProgress } from './lifecycle.ts'
import type { ModelChoice } from './model-choice.ts'
import type { TurnRequestIds } from './request-ids.ts'
import type { Send } from './send.ts'

export interface RunnerDeps extends TurnDeps {
  leases: ConversationLeases
  stops: StopChannel
  /** Lease lifetime; renewed every third of it. A dead runner's turns are taken over after it. */
  leaseMs: number
  /** Aborted by close() as it stops the turns left (the signal is TurnDeps.shutdown). */
  stopTurns?: AbortController
  /** Where an accepted turn's send request id is kept for its log lines (request-ids.ts). */
  requestIds?: Pick<TurnRequestIds, 'remember'>
}

/** A turn this runner runs now, and how to abort it. */
interface RunningTurn {
  messageId: string
  abort: AbortController
  progress: TurnProgress
  /** The turn as stored claimed when this process accepted it: it runs without a claim. */
  claimedAtAccept?: Turn
}

/**
 * Where the runner of one conversation is, one state at a time:
 * `leasing` (asking for the conversation's lease), `claiming` (holding it,
 * claiming the next queued turn), `running` (a turn runs: a stop, a shutdown
 * or the lease's loss aborts it), `releasing` (the queue is drained, or no
 * longer this runner's: the lease goes back). A drive started by the send it
 * accepted with the lease begins `running` that turn.
 */
type DriveState =
  | { name: 'leasing' }
  | { name: 'claiming'; lease: Lease }
  | { name: 'running'; lease: Lease; turn: RunningTurn }
  | { name: 'releasing'; lease: Lease }

interface Drive {
  state: DriveState
  /** User messages of turns accepted by this process, by reply id (saves a query per turn). */
  inputs: Map<string, readonly StoredMessage[]>
  /** Told meanwhile: a turn was accepted here since the drive last looked at the queue. */
  pending: boolean
  /** Told meanwhile: the lease is gone (a renewal found it taken or lost); no next turn starts here. */
  lost: boolean
  done: Promise<void>
}

/** The turn a drive runs now, if any. */
const runningTurnOf = (drive: Drive | undefined): RunningTurn | undefined =>
  drive?.state.name === 'running' ? drive.state.turn : undefined

export type TurnRunner = ReturnType<typeof createTurnRunner>

/** A turn still running when the runner closed: how much text its log held, and whether its reply was stored. */
export interface LeftTurn {
  conversationId: string
  messageId: string
  chars: number
  stored: boolean
}

const newProgress = (): TurnProgress => ({ text: () => '', stored: false })

/** The claim of a turn stored claimed as it was accepted: it never ran, and no stop was recorded before it started. */
const CLAIMED_AT_ACCEPT: TurnClaim = {
  previousToken: null,
  content: { content_type: 'text', parts: [''] },
  checkpointSteps: null,
  stopRequested: false,
}

export function createTurnRunner(deps: RunnerDeps) {
  const drives = new Map<string, Drive>()
  let closing = false

  const abortTurn = (drive: Drive | undefined, reason: AbortReason, messageId?: string) => {
    const current = runningTurnOf(drive)
    if (current && (messageId === undefined || current.messageId === messageId))
      current.abort.abort(reason)
  }

  deps.stops.subscribe(({ conversationId, messageId }) =>
    abortTurn(drives.get(conversationId), 'stop', messageId),
  )

  /** Runs the queue while this process holds the lease; resolves whether to look at the queue again. */
  async function runQueue(conversationId: string, drive: Drive): Promise<boolean> {
    if (drive.state.name === 'leasing') {
      const lease = await deps.leases.acquire(conversationId, deps.leaseMs)
      if (!lease) return false
      drive.state = { name: 'claiming', lease }
    }
    const { lease } = drive.state
    let drained = false
    let wanted = true
    try {
      let more = true
      const accepted = runningTurnOf(drive)
      if (accepted?.claimedAtAccept) {
        // Claimed as it was stored, its log opened under the lease: nothing to claim.
        const turn = accepted.claimedAtAccept
        const over = await runTurn(deps, turn, CLAIMED_AT_ACCEPT, {
          token: lease.token,
          signal: accepted.abort.signal,
          progress: accepted.progress,
          inputs: drive.inputs.get(turn.messageId),
          logOpened: true,
        })
        drive.inputs.delete(turn.messageId)
        drive.state = { name: 'claiming', lease }
        if (!over) return false
        more = false
      }
      while (!closing && !drive.lost && (more || drive.pending)) {
        drive.pending = false
        const next = await claimNextTurn(deps.db, conversationId, lease.token, deps.leaseMs)
        if (!next) break
        // The oldest turn belongs to a newer lease holder: not this runner's queue any more.
        if (!next.claim) return false
        more = next.more
        const running = {
          messageId: next.turn.messageId,
          abort: new AbortController(),
          progress: newProgress(),
        }
        drive.state = { name: 'running', lease, turn: running }
        const over = await runTurn(deps, next.turn, next.claim, {
          token: lease.token,
          signal: running.abort.signal,
          progress: running.progress,
          inputs: drive.inputs.get(next.turn.messageId),
        })
        drive.inputs.delete(next.turn.messageId)
        drive.state = { name: 'claiming', lease }
        // A turn this runner cannot end is left to the sweep, not retried in a loop.
        if (!over) return false
      }
      drained = !closing && !drive.lost
    } finally {
      drive.state = { name: 'releasing', lease }
      // When release fails, wanted stays true: looking again is the safe side.
      wanted = await deps.leases.release(lease).catch((error) => {
        deps.warn('could not release a lease', error)
        return true
      })
    }
    return drained && (wanted || drive.pending)
  }

  /** Makes sure someone runs the conversation's queued turns: this process, if the lease is free. */
  function kick(conversationId: string): Drive | undefined {
    if (closing) return undefined
    const running = drives.get(conversationId)
    if (running) {
      running.pending = true
      return running
    }
    return drive(conversationId, {
      state: { name: 'leasing' },
      inputs: new Map(),
      pending: false,
      lost: false,
    })
  }

  /** Starts running a conversation's queue here, from `state`. */
  function drive(conversationId: string, state: Omit<Drive, 'done'>): Drive {
    const drive: Drive = { ...state, done: Promise.resolve() }
    drives.set(conversationId, drive)
    // A stop whose message is lost still reaches the turns run here.
    const unwatch = deps.stops.watch(conversationId)
    drive.done = runQueue(conversationId, drive)
      .catch((error) => {
        deps.warn('turn runner failed', error)
        return false
      })
      .then(async (lookAgain) => {
        unwatch()
        drives.delete(conversationId)
        // A send accepted while the lease was being given back (or while this
        // drive was ending without it) is run now.
        if ((lookAgain || drive.pending) && (await nextTurn(deps.db, conversationId)))
          kick(conversationId)
      })
      .catch((error) => deps.warn('turn runner failed', error))
    return drive
  }

  /** Leases taken by leaseForAccept for sends being accepted now, by conversation (renewed like the drives'). */
  const leasedForAccept = new Map<string, Lease>()

  const renewals = setInterval(
    () => {
      for (const lease of leasedForAccept.values())
        deps.leases
          .renew(lease, deps.leaseMs)
          .catch((error) => deps.warn('could not renew a lease', error))
      for (const drive of drives.values()) {
        if (drive.state.name === 'leasing' || drive.lost) continue
        const { lease } = drive.state
        deps.leases.renew(lease, deps.leaseMs).then(
          (held) => {
            // The lease is gone (taken, or lost with the turn state): no next
            // turn starts here. The running one goes on - its row's heartbeat
            // keeps it from being taken over while this process lives, and
            // the log's and the row's fences stop it if it was.
            if (!held) drive.lost = true
          },
          (error) => deps.warn('could not renew a lease', error),
        )
      }
    },
    Math.max(10, Math.floor(deps.leaseMs / 3)),
  )
  renewals.unref?.()

  /**
   * Kicks every conversation with unfinished turns whose runner may be gone,
   * and ends the streams a dead runner left open after storing their reply.
   */
  async function sweep(): Promise<void> {
    if (closing) return
    // Only turns older than a lease: a younger one is still being handed to its runner.
    for (const conversationId of await conversationsWithTurns(deps.db, deps.leaseMs))
      kick(conversationId)
    // Streams a dead runner left open after storing their reply; a send queued meanwhile is run.
    const abandoned = await endAbandonedStreams(deps, deps.leases, {
      leaseMs: deps.leaseMs,
      olderThanMs: deps.leaseMs,
    })
    for (const conversationId of abandoned) kick(conversationId)
  }
  let sweeper: ReturnType<typeof setInterval> | undefined
  const sweepNow = () => void sweep().catch((error) => deps.warn('turn sweep failed', error))

  const whenIdle = async () => {
    while (drives.size > 0) await Promise.all([...drives.values()].map((drive) => drive.done))
  }

  /**
   * Starts an accepted turn: at once here with the lease taken for it (the
   * turn stored claimed under it when `claimed` is given), else by whoever
   * runs the conversation's queue - this process if the lease is free.
   */
  function start(accepted: AcceptedTurn, lease: Lease | undefined): void {
    const { conversationId, messageId, inputs, claimed } = accepted
    if (!lease) {
      kick(conversationId)?.inputs.set(messageId, inputs)
      return
    }
    leasedForAccept.delete(conversationId)
    const ending = drives.get(conversationId)
    if (ending) {
      // A drive started meanwhile (a sweep) cannot get the lease this send
      // holds, so it is ending: this one starts once it has.
      void ending.done.then(() => start(accepted, lease))
      return
    }
    drive(conversationId, {
      state: claimed
        ? // Running from now on, so a stop that arrives before the turn starts aborts it.
          {
            name: 'running',
            lease,
            turn: {
              messageId,
              abort: new AbortController(),
              progress: newProgress(),
              claimedAtAccept: claimed,
            },
          }
        : { name: 'claiming', lease },
      inputs: new Map([[messageId, inputs]]),
      pending: false,
      lost: false,
    })
  }

  /**
   * The conversation's lease for a send about to be accepted here, so that
   * its turn can be stored claimed and start here without a claim; undefined
   * while shutting down, while this process runs the conversation already,
   * or when someone else holds the lease.
   */
  async function leaseForAccept(conversationId: string): Promise<Lease | undefined> {
    if (closing || drives.has(conversationId)) return undefined
    const lease = await deps.leases.acquire(conversationId, deps.leaseMs)
    // Renewed while the send is accepted, however long that takes.
    if (lease) leasedForAccept.set(conversationId, lease)
    return lease
  }

  /** Gives back the lease of a send that was refused; runs what was queued meanwhile. */
  async function giveBack(conversationId: string, lease: Lease): Promise<void> {
    leasedForAccept.delete(conversationId)
    if (await deps.leases.release(lease)) kick(conversationId)
  }

  /** Sends to one conversation accepted here, chained so they queue in arrival order. */
  const arriving = new Map<string, Promise<unknown>>()
  function inArrivalOrder<T>(conversationId: string, accept: () => Promise<T>): Promise<T> {
    const accepted = (arriving.get(conversationId) ?? Promise.resolve()).then(accept, accept)
    const settled = accepted.catch(() => {})
    arriving.set(conversationId, settled)
    void settled.then(() => {
      if (arriving.get(conversationId) === settled) arriving.delete(conversationId)
    })
    return accepted
  }

  return {
    /**
     * Accepts a send (accept.ts: the only step that may still refuse it) and
     * starts its turn. Sends to one conversation accepted here are accepted in
     * arrival order. With the conversation's lease free (always so for a new
     * conversation) the turn is stored claimed by this process and runs here
     * at once; else it queues for whoever holds the lease.
     */
    accept(send: Send, choice: ModelChoice): Promise<AcceptedTurn> {
      const conversationId = send.conversationId ?? deps.newId()
      return inArrivalOrder(conversationId, async () => {
        const leasing = leaseForAccept(conversationId)
        // Its failure is acceptTurn's to report; it is handled here as well, before acceptTurn awaits it.
        leasing.catch(() => {})
        try {
          const accepted = await acceptTurn(deps, send, { conversationId, choice, lease: leasing })
          deps.requestIds?.remember(accepted.messageId, send.requestId)
          start(accepted, await leasing)
          return accepted
        } catch (error) {
          const lease = await leasing.catch(() => undefined)
          if (lease)
            await giveBack(conversationId, lease).catch((cause) =>
              deps.warn('could not release a lease', cause),
            )
          throw error
        }
      })
    },
    /**
     * Sweeps now and every half lease from now on: finishes what a crashed
     * process left, and takes over the turns of instances that died.
     */
    startSweeping() {
      if (sweeper || closing) return
      sweepNow()
      sweeper = setInterval(sweepNow, Math.max(50, Math.floor(deps.leaseMs / 2)))
      sweeper.unref?.()
    },
    /** Conversations this process is running turns for. */
    get size() {
      return drives.size
    },
    /** Turns running here (one per driven conversation) and starting (a send holding a lease to run here). */
    get running() {
      return drives.size + leasedForAccept.size
    },
    whenIdle,
    /**
     * Stops taking turns; waits up to graceMs for running ones, then stops
     * them (stored as interrupted) and waits up to stopMs more for that.
     * Resolves with the turns still running then: what is not stored of them
     * is left unfinished, for the takeover of another instance (or of this
     * one restarted).
     */
    async close(graceMs: number, stopMs: number): Promise<LeftTurn[]> {
      closing = true
      clearInterval(sweeper)
      const within = (ms: number) =>
        new Promise<void>((resolve) => setTimeout(resolve, ms).unref?.())
      await Promise.race([whenIdle(), within(graceMs)])
      deps.stopTurns?.abort()
      for (const drive of drives.values()) abortTurn(drive, 'shutdown')
      await Promise.race([whenIdle(), within(stopMs)])
      clearInterval(renewals)
      return [...drives.entries()].flatMap(([conversationId, drive]) => {
        const running = runningTurnOf(drive)
        return running
          ? [
              {
                conversationId,
                messageId: running.messageId,
                chars: running.progress.text().length,
                stored: running.progress.stored,
              },
            ]
          : []
      })
    },
  }
}
