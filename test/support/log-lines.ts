// A real pino logger of the service (observability/logger.ts) whose JSON lines
// are collected in memory, parsed, for tests of what the service logs.
import { createLogger, type Logger } from '../../src/observability/logger.ts'

export type LogLine = Record<string, unknown> & { level: string; msg: string }

export interface CollectedLog {
  log: Logger
  readonly lines: LogLine[]
  /** Every line as it was written, for "never contains" checks. */
  raw: () => string
  /** The first line that matches, as soon as it is written (within timeoutMs). */
  waitFor: (matches: (line: LogLine) => boolean, timeoutMs?: number) => Promise<LogLine>
}

export function collectingLogger(level: 'debug' | 'info' = 'debug'): CollectedLog {
  const written: string[] = []
  const parsed: LogLine[] = []
  const waiters = new Set<(line: LogLine) => void>()
  const destination = {
    write(text: string) {
      written.push(text)
      const line = JSON.parse(text) as LogLine
      parsed.push(line)
      for (const waiter of [...waiters]) waiter(line)
    },
  }
  return {
    log: createLogger({ level, destination }),
    get lines() {
      return [...parsed]
    },
    raw: () => written.join(''),
    waitFor(matches, timeoutMs = 5_000) {
      const found = parsed.find(matches)
      if (found) return Promise.resolve(found)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(waiter)
          reject(new Error(`no such log line within ${timeoutMs} ms`))
        }, timeoutMs)
        const waiter = (line: LogLine) => {
          if (!matches(line)) return
          clearTimeout(timer)
          waiters.delete(waiter)
          resolve(line)
        }
        waiters.add(waiter)
      })
    },
  }
}
