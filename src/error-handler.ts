// The one Elysia hook that turns every failure into CONTRACT §3's JSON body:
// typed AppErrors keep their status, validation names the field, anything
// unexpected is logged and answered with an opaque 500.
import { Elysia, type ValidationError } from 'elysia'
import { AppError, errorResponse, toErrorResponse, unavailable } from './errors.ts'
import { isDatabaseUnavailable } from './storage/db.ts'

/** `/messages/0/role` → `messages[0].role`, the way a client developer writes it. */
export function fieldName(path: string): string {
  const name = path
    .split('/')
    .filter((part) => part !== '')
    .map((part, index) => (/^\d+$/.test(part) ? `[${part}]` : index === 0 ? part : `.${part}`))
    .join('')
  return name === '' ? 'body' : name
}

function describeValidation(error: Pick<ValidationError, 'all' | 'type'>): string {
  const first = error.all[0]
  const where = error.type === 'body' ? '' : `${error.type} `
  if (!first || !('path' in first)) return `The ${where}request is not valid.`
  const field = fieldName(first.path)
  const value = first.value
  // Missing required properties are reported at the parent with value undefined.
  if (value === undefined) return `The ${where}field "${field}" is required.`
  // A schema may say its rule for people (`error`), where a pattern would not.
  const rule = (first.schema as { error?: unknown } | undefined)?.error
  if (typeof rule === 'string') return `The ${where}field "${field}" ${rule}.`
  return `The ${where}field "${field}" is not valid: ${first.message.toLowerCase()}.`
}

export const errorHandler = new Elysia({ name: 'error-handler' }).onError(
  { as: 'global' },
  ({ code, error, path }) => {
    if (error instanceof AppError) return toErrorResponse(error)
    // Errors thrown while reading the body (size limit) arrive wrapped by Elysia.
    if (code === 'PARSE' && error.cause instanceof AppError) return toErrorResponse(error.cause)
    switch (code) {
      case 'VALIDATION':
        return errorResponse(422, {
          detail: describeValidation(error),
          code: 'validation_error',
        })
      case 'PARSE':
        return errorResponse(422, {
          detail: 'The request body is not valid JSON.',
          code: 'invalid_json',
        })
      case 'NOT_FOUND':
        return errorResponse(404, { detail: `No route matches ${path}.`, code: 'not_found' })
      default:
        if (isDatabaseUnavailable(error))
          return toErrorResponse(unavailable('The database is unavailable; try again shortly.'))
        console.error(
          JSON.stringify({
            level: 'error',
            msg: 'unhandled error',
            path,
            code,
            error: String(error),
          }),
        )
        return toErrorResponse(error)
    }
  },
)
