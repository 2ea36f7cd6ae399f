// Latency statistics over raw samples: nearest-rank percentiles on sorted
// values, so the figures are exact for the samples taken (no histogram buckets,
// which would round a 0.8 ms answer up to 1 ms).

export interface Summary {
  count: number
  mean: number
  p50: number
  p95: number
  p99: number
  max: number
}

/** A growable sample buffer that stops accepting at `limit`, so memory stays bounded. */
export class Samples {
  private values: Float64Array
  private size = 0

  constructor(private readonly limit = 4_000_000) {
    this.values = new Float64Array(Math.min(limit, 65_536))
  }

  add(value: number): void {
    if (this.size >= this.limit) return
    if (this.size === this.values.length) {
      const bigger = new Float64Array(Math.min(this.limit, this.values.length * 2))
      bigger.set(this.values)
      this.values = bigger
    }
    this.values[this.size++] = value
  }

  get count(): number {
    return this.size
  }

  summary(): Summary {
    return summarize(this.values.subarray(0, this.size))
  }
}

/** The nearest-rank percentile `p` (0–100) of ascending `sorted`. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? 0
}

export function summarize(values: ArrayLike<number>): Summary {
  const sorted = Float64Array.from(values).sort()
  let total = 0
  for (const value of sorted) total += value
  return {
    count: sorted.length,
    mean: sorted.length === 0 ? 0 : total / sorted.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.length === 0 ? 0 : (sorted[sorted.length - 1] ?? 0),
  }
}
