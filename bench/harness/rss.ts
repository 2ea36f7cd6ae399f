// Samples a process's resident memory (VmRSS in /proc/<pid>/status) on a timer,
// keeping the peak: the memory a load really costs, including short spikes.
import { readFileSync } from 'node:fs'

/** The process's RSS in bytes, or undefined when /proc is not there (not Linux) or it exited. */
export function readRss(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1]
    return kb === undefined ? undefined : Number(kb) * 1024
  } catch {
    return undefined
  }
}

export interface RssSampler {
  /** Stops sampling; returns the peak and the last sample, in bytes. */
  stop(): { peak: number | undefined; last: number | undefined; samples: number }
}

export function sampleRss(pid: number, intervalMs = 100): RssSampler {
  let peak: number | undefined
  let last: number | undefined
  let samples = 0
  const take = () => {
    const rss = readRss(pid)
    if (rss === undefined) return
    samples++
    last = rss
    peak = Math.max(peak ?? 0, rss)
  }
  take()
  const timer = setInterval(take, intervalMs)
  return {
    stop() {
      clearInterval(timer)
      take()
      return { peak, last, samples }
    },
  }
}
