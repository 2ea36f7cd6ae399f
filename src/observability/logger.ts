// The one logger: pino writing JSON lines (level, ISO time, msg, fields) to
// stdout at LOG_LEVEL. Everything the service logs goes through a Logger that
// is passed in; nothing logs through console. Error causes are logged as
// safeErrorMessage (no URLs, no passwords), and the usual secret-bearing
// field names are redacted should one ever be logged.
import pino, { type DestinationStream, type Logger } from 'pino'
import type { LogLevel } from '../config.ts'
import { safeErrorMessage } from '../dependency-probe.ts'

export type { Logger }

export interface LoggerOptions {
  level: LogLevel
  /** Where the lines go; stdout when absent (tests pass a collecting stream). */
  destination?: DestinationStream
}

const REDACTED = [
  'authorization',
  'token',
  'password',
  'apiKey',
  'secret',
  '*.authorization',
  '*.token',
  '*.password',
  '*.apiKey',
  '*.secret',
]

export function createLogger({ level, destination }: LoggerOptions): Logger {
  return pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED, censor: '***' },
    },
    destination ?? pino.destination({ dest: 1, sync: true }),
  )
}

/** A logger that writes nothing (tests and tools that do not look at logs). */
export const silentLogger = (): Logger => pino({ level: 'silent' })

/** The `warn(message, error)` callback the services take, writing to log. */
export const warnTo =
  (log: Logger) =>
  (message: string, error: unknown): void =>
    log.warn({ error: safeErrorMessage(error) }, message)
