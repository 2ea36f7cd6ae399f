// Sends the service refused, counted by what it said (CONTRACT §3, §19): a
// `503 overloaded` is this instance shedding load before it starts work; a
// 503 naming the turn state is a store it took for unavailable. A scale run
// beside a CPU hog tells the two apart: the second on a healthy Redis is the
// failure #29 was about.

/** What one refused send said: `overloaded`, `state_unavailable`, or `<status> <code>`. */
export function refusalOf(status: number, body: string): string {
  let code: string | undefined
  let detail = ''
  try {
    const parsed = JSON.parse(body) as { code?: unknown; detail?: unknown }
    if (typeof parsed.code === 'string') code = parsed.code
    if (typeof parsed.detail === 'string') detail = parsed.detail
  } catch {}
  if (code === 'overloaded') return 'overloaded'
  if (status === 503 && /turn state/i.test(detail)) return 'state_unavailable'
  return `${status} ${code ?? 'without a JSON body'}`
}

/** How many results were refused, by refusalOf's answer. */
export function countRefusals(results: { refusal?: string | undefined }[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const { refusal } of results)
    if (refusal !== undefined) counts[refusal] = (counts[refusal] ?? 0) + 1
  return counts
}

/** `overloaded 12, state_unavailable 0`: the two codes always, any other as it came. */
export function describeRefusals(counts: Record<string, number>): string {
  const all = { overloaded: 0, state_unavailable: 0, ...counts }
  return Object.entries(all)
    .map(([kind, count]) => `${kind} ${count}`)
    .join(', ')
}

/**
 * The servers' own count of why they refused as overloaded
 * (conduit_overloaded_total{reason}: admission control's reasons, and
 * `<store>_deadline` for a store deadline missed while the server lagged),
 * summed over the Prometheus texts of their /metrics.
 */
export function overloadReasonsOf(metricsTexts: string[]): Record<string, number> {
  const reasons: Record<string, number> = {}
  const line = /^conduit_overloaded_total\{reason="([^"]+)"\} (\d+(?:\.\d+)?)$/gm
  for (const text of metricsTexts)
    for (const [, reason, count] of text.matchAll(line))
      if (reason !== undefined) reasons[reason] = (reasons[reason] ?? 0) + Number(count)
  return reasons
}

/** Each server's /metrics, read after a run (a server without them, the bare SSE reference, adds nothing). */
export async function readOverloadReasons(urls: string[]): Promise<Record<string, number>> {
  const texts = await Promise.all(
    urls.map((url) =>
      fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) })
        .then((response) => (response.ok ? response.text() : ''))
        .catch(() => ''),
    ),
  )
  return overloadReasonsOf(texts)
}

/** `overloaded 12 (event_loop_lag 10, database_deadline 2), state_unavailable 0`. */
export function describeRefusalsWithReasons(
  counts: Record<string, number>,
  reasons: Record<string, number> | undefined,
): string {
  const described = describeRefusals(counts)
  const entries = Object.entries(reasons ?? {})
  if (entries.length === 0) return described
  const why = entries.map(([reason, count]) => `${reason} ${count}`).join(', ')
  return described.replace(/^overloaded (\d+)/, `overloaded $1 (the servers counted: ${why})`)
}
