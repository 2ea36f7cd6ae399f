// The one Elysia hook that turns every failure into CONTRACT §3's JSON body,
// through error-response.ts: domain errors as they are, Elysia's own failures
// (validation naming the field, a body that is not JSON, no such route) and a
// store that is down as the domain errors they mean, anything unexpected
// logged and answered with an opaque 500. The status is also put in
// `set.status`, where the access log (request-log.ts) reads it.
import { Elysia, type ValidationError } from 'elysia'
import { DomainError, invalid, notFound, overloaded, unavailable } from '../errors.ts'
import { isStateUnavailable } from '../state/state-unavailable.ts'
import { isDatabaseUnavailable } from '../storage/db.ts'
import { StoreOverloadedError } from '../storage/store-failure.ts'
import { OVERLOADED_RETRY_AFTER_SECONDS } from './admission.ts'
import { notJson } from './body-limit.ts'
import { safeErrorMessage } from './dependency-probe.ts'
import { toErrorResponse } from './error-response.ts'

/** `/messages/0/role` → `messages[0].role`, the way a client developer writes it. */
export function fieldName(path: string): string {
  const name = path
    .split('/')
    .filter((part) => part !== '')
    .map((part, index) => (/^\d+$/.test(part) ? `[${part}]` : index === 0 ? part : `.${part}`))
    .join('')
  return name === '' ? 'body' : name
}

/** `"a", "b"` for a union of literals (whose own message only says "expected union value"). */
function literalChoices(schema: unknown): string | undefined {
  const anyOf = (schema as { anyOf?: { const?: unknown }[] } | undefined)?.anyOf
  if (!anyOf?.every((option) => option.const !== undefined)) return undefined
  return anyOf.map((option) => JSON.stringify(option.const)).join(', ')
}

function describeValidation(error: Pick<ValidationError, 'all' | 'type'>): string {
  const first = error.all[0]
  const where = error.type === 'body' ? '' : `${error.type} `
  if (!first || !('path' in first)) return `The ${where}request is not valid.`
  const field = fieldName(first.path)
  const value = first.value
  // Missing required properties are reported at the parent with value undefined.
  if (value === undefined) return `The ${where}field "${field}" is required.`
  const choices = literalChoices(first.schema)
  if (choices) return `The ${where}field "${field}" must be one of ${choices}.`
  // A schema may say its rule for people (`error`), where a pattern would not.
  const rule = (first.schema as { error?: unknown } | undefined)?.error
  if (typeof rule === 'string') return `The ${where}field "${field}" ${rule}.`
  return `The ${where}field "${field}" is not valid: ${first.message.toLowerCase()}.`
}

/** Where an unexpected failure is logged: the service's pino logger is one. */
export interface ErrorLog {
  error(fields: Record<string, unknown>, message: string): void
}

/** Counts sends and reads refused as overloaded (metrics.ts's conduit_overloaded_total). */
export interface OverloadCounter {
  inc(labels: { reason: string }): void
}

/**
 * The error mapping, logging what nobody expected (an opaque 500) to log; a
 * store deadline missed while this process was the slow one counts in
 * `overloads` as reason `<store>_deadline` (`database_deadline`,
 * `state_deadline`, `cache_deadline`; admission.ts counts its own reasons).
 */
export function errorHandlerWith(log: ErrorLog, overloads?: OverloadCounter) {
  return new Elysia({ name: 'error-handler' }).onError(
    { as: 'global' },
    ({ code, error, path, set }) => {
      const response = toErrorResponse(domainErrorOf(code, error, path, log))
      set.status = response.status
      if (error instanceof StoreOverloadedError)
        overloads?.inc({ reason: `${error.store}_deadline` })
      return response
    },
  )
}

/** The mapping without logging, for test apps that mount single plugins. */
export const errorHandler = errorHandlerWith({ error() {} })

type ErrorCode = string | number

/** What a failure means in domain terms; anything unexpected is logged and passed on as it is. */
function domainErrorOf(code: ErrorCode, error: unknown, path: string, log: ErrorLog): unknown {
  if (error instanceof DomainError) return error
  // Errors thrown while reading the body (size limit) arrive wrapped by Elysia.
  if (code === 'PARSE' && error instanceof Error && error.cause instanceof DomainError)
    return error.cause
  switch (code) {
    case 'VALIDATION':
      return invalid(describeValidation(error as ValidationError))
    case 'PARSE':
      return notJson()
    case 'NOT_FOUND':
      return notFound(`No route matches ${path}.`)
    default:
      // A deadline passed while this process lagged, or the database pool had no
      // connection free while the database answered: busy, not down (CONTRACT §19).
      if (error instanceof StoreOverloadedError)
        return overloaded(
          'The server is too busy to take this request now; try again shortly.',
          OVERLOADED_RETRY_AFTER_SECONDS,
        )
      if (isDatabaseUnavailable(error))
        return unavailable('The database is unavailable; try again shortly.')
      if (isStateUnavailable(error))
        return unavailable('The turn state store is unavailable; try again shortly.')
      log.error({ path, code, error: safeErrorMessage(error) }, 'unhandled error')
      return error
  }
}
