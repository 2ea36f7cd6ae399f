// The turn state's ports in front of its breaker (store-breaker.ts):
//
// - Every call reports an outage: one that fails because Redis cannot be
//   reached (isStateUnavailable: a missed deadline, a lost connection, a
//   failover) opens the breaker, whichever call it is - a running turn's
//   append as much as a request's read - unless it was a deadline that
//   passed while this process lagged (the breaker's failure policy,
//   store-failure.ts): that call fails with a StoreOverloadedError (a 503
//   `overloaded` for a request) and opens nothing. So the breaker sees each state
//   command's failure where the service awaits it, without reaching into
//   the Redis client.
// - The calls that only a request waits for - a log's state (resume, stream
//   status, a delete waiting for a turn), opening a send's log, sending a
//   stop - are refused at once with the state's StoreUnavailableError (a
//   503) while the breaker is open, instead of each waiting out the state's
//   deadline on a Redis already known to be frozen or gone. Everything else -
//   a running turn's appends and finish, lease renewals, the recovery sweep -
//   still goes to Redis with its deadline: work already accepted must not
//   fail faster than Redis does.
import { type StoreBreaker, StoreUnavailableError } from '../storage/store-breaker.ts'
import { StoreOverloadedError } from '../storage/store-failure.ts'
import type { ConversationLeases } from './conversation-leases.ts'
import { isStateUnavailable } from './state-unavailable.ts'
import type { StopChannel } from './stop-channel.ts'
import type { TurnLogStore } from './turn-log/turn-log-store.ts'

/**
 * Opens the breaker when error, of a call started at startedAt, says the
 * state cannot be reached (not when the breaker itself refused, nor when
 * this process was too busy to tell); answers what to throw.
 */
function report(breaker: StoreBreaker, error: unknown, startedAt: number): unknown {
  if (error instanceof StoreUnavailableError || error instanceof StoreOverloadedError) return error
  return isStateUnavailable(error) ? breaker.failed(error, startedAt) : error
}

/** call, reporting its outages to the breaker. */
export function reporting<A extends unknown[], R>(
  breaker: StoreBreaker,
  call: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return async (...args) => {
    const startedAt = breaker.now()
    try {
      const result = await call(...args)
      breaker.answered()
      return result
    } catch (error) {
      throw report(breaker, error, startedAt)
    }
  }
}

/** call, refused at once while the breaker is open. */
function gated<A extends unknown[], R>(
  breaker: StoreBreaker,
  call: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return (...args) =>
    breaker.available ? call(...args) : Promise.reject(new StoreUnavailableError(breaker.store))
}

export function gateTurnLogs(logs: TurnLogStore, breaker: StoreBreaker): TurnLogStore {
  const watched = <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    reporting(breaker, call)
  return {
    ...logs,
    open: gated(breaker, watched(logs.open.bind(logs))),
    info: gated(breaker, watched(logs.info.bind(logs))),
    append: watched(logs.append.bind(logs)),
    claim: watched(logs.claim.bind(logs)),
    finish: watched(logs.finish.bind(logs)),
    unfinished: watched(logs.unfinished.bind(logs)),
    readAll: watched(logs.readAll.bind(logs)),
    remove: watched(logs.remove.bind(logs)),
    async *read(messageId, offset, signal) {
      // A follower's wait has no deadline: its failures are lost connections, judged from its start.
      const startedAt = breaker.now()
      try {
        yield* logs.read(messageId, offset, signal)
      } catch (error) {
        throw report(breaker, error, startedAt)
      }
    },
  }
}

export function gateLeases(leases: ConversationLeases, breaker: StoreBreaker): ConversationLeases {
  return {
    ...leases,
    acquire: reporting(breaker, leases.acquire.bind(leases)),
    renew: reporting(breaker, leases.renew.bind(leases)),
    release: reporting(breaker, leases.release.bind(leases)),
    isHeld: reporting(breaker, leases.isHeld.bind(leases)),
  }
}

export function gateStops(stops: StopChannel, breaker: StoreBreaker): StopChannel {
  return { ...stops, publish: gated(breaker, reporting(breaker, stops.publish.bind(stops))) }
}
