// The one logger: pino writing JSON lines (level, ISO time, msg, fields) to
// stdout at LOG_LEVEL. Everything the service logs goes through a Logger that
// is passed in; nothing logs through console. Error causes are logged as
// safeErrorMessage (no URLs, no passwords), and the usual secret-bearing
// field names are censored should one ever be logged.
//
// Lines go out in batches (log-destination.ts): a write per request line was
// 13 % of a cache hit's CPU. Censoring is a formatter over the line's own keys
// and those one level down, not pino's `redact`, whose library re-parses every
// path on every line (10 % of a cache hit). The time is formatted once per
// millisecond, and the access log writes its line from members it serialized
// itself (preformattedLines): under Bun pino quotes every key and string with
// JSON.stringify, which with the time was 12 % of a cache hit over HTTP.
import pino, { type DestinationStream, type Logger } from 'pino'
import type { LogLevel } from '../config.ts'
import { safeErrorMessage } from '../http/dependency-probe.ts'
import { batchedDestination } from './log-destination.ts'

export type { Logger }

export interface LoggerOptions {
  level: LogLevel
  /** Where the lines go; stdout when absent (tests pass a collecting stream). */
  destination?: DestinationStream
}

/** Field names whose values never reach a log line, at the top level or one level down. */
export const CENSORED_KEYS: ReadonlySet<string> = new Set([
  'authorization',
  'token',
  'password',
  'apiKey',
  'secret',
])
const CENSOR = '***'

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * `fields` with every censored key's value replaced, at its top level and
 * `depth` levels down, copying only what changes.
 */
export function censored(fields: Record<string, unknown>, depth = 1): Record<string, unknown> {
  let result = fields
  for (const key in fields) {
    const value = fields[key]
    const replacement = CENSORED_KEYS.has(key)
      ? CENSOR
      : depth > 0 && isRecord(value) && !(value instanceof Error)
        ? censored(value, depth - 1)
        : value
    if (replacement === value) continue
    if (result === fields) result = { ...fields }
    result[key] = replacement
  }
  return result
}

let timeMs = -1
let timeField = ''
/** `,"time":"<ISO 8601>"`, as pino's isoTime writes it, made once per millisecond. */
export function isoTimeField(): string {
  const now = Date.now()
  if (now !== timeMs) {
    timeMs = now
    timeField = `,"time":"${new Date(now).toISOString()}"`
  }
  return timeField
}

export function createLogger({ level, destination }: LoggerOptions): Logger {
  return pino(
    {
      level,
      base: undefined,
      timestamp: isoTimeField,
      formatters: { level: (label) => ({ level: label }), log: (fields) => censored(fields) },
    },
    destination ?? batchedDestination(),
  )
}

/** Writes one line of `log`, given its members as JSON text (`"key":value,…`). */
export type PreformattedLine = (level: 'debug' | 'info', members: string) => void

/**
 * Lines of `log` whose fields the caller serialized, with `msg` (a constant):
 * the same JSON line pino writes (level, time, the logger's bindings, the
 * members, msg) to the same destination, if `log` is enabled for the level.
 * For a hot line whose values need no escaping or are quoted once and kept;
 * the caller's members are not censored.
 */
export function preformattedLines(log: Logger, msg: string): PreformattedLine {
  const symbols = pino.symbols
  const stream = (log as unknown as Record<symbol, DestinationStream>)[symbols.streamSym]
  const bindings = (log as unknown as Record<symbol, string>)[symbols.chindingsSym] ?? ''
  const end = `,"msg":${JSON.stringify(msg)}}\n`
  return (level, members) => {
    if (!log.isLevelEnabled(level)) return
    stream?.write(`{"level":"${level}"${isoTimeField()}${bindings},${members}${end}`)
  }
}

/** A logger that writes nothing (tests and tools that do not look at logs). */
export const silentLogger = (): Logger => pino({ level: 'silent' })

/** The `warn(message, error)` callback the services take, writing to log. */
export const warnTo =
  (log: Logger) =>
  (message: string, error: unknown): void =>
    log.warn({ error: safeErrorMessage(error) }, message)
