// Reduces many streaming clients' results to the figures a report shows:
// completed streams, time to first append item, gaps between items, throughput.
import { countRefusals } from './refusals.ts'
import type { StreamResult } from './sse-client.ts'
import { Samples, type Summary, summarize } from './stats.ts'

export interface StreamSummary {
  streams: number
  /** Streams that ended with `data: [DONE]`. */
  completed: number
  durationSec: number
  /** Completed streams per second over the scenario. */
  streamsPerSec: number
  /** Whole-stream time, request to [DONE]. */
  streamTime: Summary
  timeToFirstItem: Summary
  itemGap: Summary
  appendItems: number
  /** Append items per second, all streams together. */
  itemsPerSec: number
  /** Up to five distinct errors, to explain failed streams. */
  errors: string[]
  /** Sends answered with an error, by what they said (refusals.ts): `overloaded`, `state_unavailable`, … */
  refusals: Record<string, number>
}

export function summarizeStreams(results: StreamResult[], durationSec: number): StreamSummary {
  const gaps = new Samples()
  const errors = new Set<string>()
  let appendItems = 0
  for (const result of results) {
    for (const gap of result.gapsMs) gaps.add(gap)
    appendItems += result.appendItems
    if (result.error !== undefined && errors.size < 5) errors.add(result.error)
  }
  const completed = results.filter((result) => result.done)
  return {
    streams: results.length,
    completed: completed.length,
    durationSec,
    streamsPerSec: completed.length / durationSec,
    streamTime: summarize(completed.map((result) => result.durationMs)),
    timeToFirstItem: summarize(
      results.flatMap((result) => (result.ttfiMs === undefined ? [] : [result.ttfiMs])),
    ),
    itemGap: gaps.summary(),
    appendItems,
    itemsPerSec: appendItems / durationSec,
    errors: [...errors],
    refusals: countRefusals(results),
  }
}
