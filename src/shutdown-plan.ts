// How SIGTERM spends its time (CONTRACT §8, §13, §19; issue #34), so the
// process is gone within SHUTDOWN_GRACE_MS and a small fixed margin whatever
// the stores are doing: first the drain (not ready, still serving: load
// balancers stop sending meanwhile), then running turns get the rest of the
// grace to finish; then the turns left are stopped and their streams ended
// (the margin's first part), then the pools close; at the hard stop the
// process exits even if a store never answered. Turns that could not be
// stored by then stay unfinished, for another instance's takeover.
import type { Config } from './config.ts'

/** Past the grace: stopping the turns left, ending their streams, closing the pools. */
export const SHUTDOWN_MARGIN_MS = 2_000
/** Of the margin: how long stopped turns and their readers get to end. */
export const STOP_TURNS_MS = 1_000

export interface ShutdownPlan {
  /** Not ready, still serving. */
  drainMs: number
  /** Then, for running turns to finish. */
  turnsMs: number
  /** Then, for the turns left to stop and their streams to end. */
  stopMs: number
  /** From SIGTERM: the process exits then, whatever is still waiting. */
  hardStopMs: number
}

export function shutdownPlan(
  config: Pick<Config, 'shutdownGraceMs' | 'shutdownDrainMs'>,
): ShutdownPlan {
  const graceMs = config.shutdownGraceMs
  const drainMs = Math.min(config.shutdownDrainMs, graceMs)
  return {
    drainMs,
    turnsMs: graceMs - drainMs,
    stopMs: STOP_TURNS_MS,
    hardStopMs: graceMs + SHUTDOWN_MARGIN_MS,
  }
}
