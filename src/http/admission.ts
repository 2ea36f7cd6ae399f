// Admission control (CONTRACT §19, "overload is not an outage"): a new send
// this instance cannot start is shed at once, before its body is read or any
// store is asked, with 503 {"detail","code":"overloaded"} and Retry-After,
// counted in conduit_overloaded_total{reason}. Turns already running keep
// streaming, and everything else - resumes, reads, stops - goes on: shedding
// the work that would add a turn is what frees the process soonest.
//
// A send is shed when any of these is past its limit (config: admission):
// - open_requests: requests open on this server, streams included (Bun's own
//   count, server.pendingRequests), over MAX_OPEN_REQUESTS;
// - running_turns: turns running or being accepted here (the conversation
//   layer's RunningTurns) at MAX_RUNNING_TURNS;
// - event_loop_lag: the event loop typically ran OVERLOAD_LAG_MS late or
//   more over the last second (the median, so one stall sheds nothing). On a
//   busy machine that, not a count, is what comes first: a process that late
//   misses the stores' deadlines itself.
//
// A retried send (CONTRACT §14) is shed like any other: telling one apart
// costs a database read, which is the work shedding saves; its retry later
// still finds the original (nothing ran twice). A client that lost a stream
// resumes it (POST …/resume), which is never shed.
import { Elysia } from 'elysia'
import { overloaded } from '../errors.ts'

/** Turns running or being accepted in this process (the conversation service provides it). */
export interface RunningTurns {
  running(): number
}

/** The limits (config.ts's AdmissionConfig: MAX_OPEN_REQUESTS, MAX_RUNNING_TURNS, OVERLOAD_LAG_MS). */
export interface AdmissionLimits {
  maxOpenRequests: number
  maxRunningTurns: number
  /** 0: lag is not checked. */
  overloadLagMs: number
}

export type OverloadReason = 'open_requests' | 'running_turns' | 'event_loop_lag'

export interface LoadReadings {
  /** Requests open on this server, the one asking included. */
  openRequests(): number
  turns?: RunningTurns
  /** The event-loop lag monitor (observability/event-loop-lag.ts). */
  lag?: { recentLagMs(): number }
}

/**
 * When a request refused as overloaded may come back (here, and for a store
 * deadline missed while this process lagged: error-handler.ts): a second
 * lets streams end and the loop catch up.
 */
export const OVERLOADED_RETRY_AFTER_SECONDS = 1

/** Why a new send cannot start now, or undefined when it can. */
export function overloadOf(
  limits: AdmissionLimits,
  load: LoadReadings,
): OverloadReason | undefined {
  if (load.openRequests() > limits.maxOpenRequests) return 'open_requests'
  if (load.turns && load.turns.running() >= limits.maxRunningTurns) return 'running_turns'
  if (limits.overloadLagMs > 0 && load.lag && load.lag.recentLagMs() >= limits.overloadLagMs)
    return 'event_loop_lag'
  return undefined
}

const SEND_PATH = '/backend-api/f/conversation'

/** The path of a request URL without parsing it (it runs on every request). */
function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  if (start === -1) return '/'
  const query = url.indexOf('?', start)
  return query === -1 ? url.slice(start) : url.slice(start, query)
}

export interface AdmissionDeps {
  limits: AdmissionLimits
  turns?: RunningTurns
  lag?: { recentLagMs(): number }
  /** Counts each shed send by why (conduit_overloaded_total); the registry is the caller's. */
  metrics: { overloaded: { inc(labels: { reason: string }): void } }
}

export function admission({ limits, turns, lag, metrics }: AdmissionDeps) {
  return new Elysia({ name: 'admission' }).onRequest(({ request, server }) => {
    if (request.method !== 'POST' || pathOf(request.url) !== SEND_PATH) return
    const reason = overloadOf(limits, {
      // Without a server (app.handle in tests) nothing is open but this request.
      openRequests: () => server?.pendingRequests ?? 1,
      ...(turns ? { turns } : {}),
      ...(lag ? { lag } : {}),
    })
    if (reason === undefined) return
    metrics.overloaded.inc({ reason })
    throw overloaded(
      'The server is too busy to start a reply now; try again shortly.',
      OVERLOADED_RETRY_AFTER_SECONDS,
    )
  })
}
