// The turn state's calls that only a request waits for - a log's state (resume,
// stream status, a delete waiting for a turn), opening a send's log, sending a
// stop - refused at once with the state's StoreUnavailableError (a 503) while
// its breaker (store-breaker.ts) is open, instead of each waiting out the
// state's deadline on a Redis already known to be frozen or gone. Everything
// else - a running turn's appends and finish, lease renewals, the recovery
// sweep - still goes to Redis with its deadline: work already accepted must
// not fail faster than Redis does.
import { type StoreBreaker, StoreUnavailableError } from '../storage/store-breaker.ts'
import type { StopChannel } from './stop-channel.ts'
import type { TurnLogStore } from './turn-log-store.ts'

function gated<A extends unknown[], R>(
  breaker: StoreBreaker,
  call: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return (...args) =>
    breaker.available ? call(...args) : Promise.reject(new StoreUnavailableError(breaker.store))
}

export function gateTurnLogs(logs: TurnLogStore, breaker: StoreBreaker): TurnLogStore {
  return { ...logs, info: gated(breaker, logs.info), open: gated(breaker, logs.open) }
}

export function gateStops(stops: StopChannel, breaker: StoreBreaker): StopChannel {
  return { ...stops, publish: gated(breaker, stops.publish) }
}
