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
