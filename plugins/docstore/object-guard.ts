// Elysia's default body normalizer (exact-mirror) copies a value declared as an
// open object before validating it, turning `"abc"` into {"0":"a",...} and
// `null` or `[1]` into objects that then pass. This guard runs in `transform`,
// before that copy, and refuses anything but a plain JSON object.
import { validationFailed } from '../../src/errors.ts'

const isPlainObject = (value: unknown) =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** Throws a 422 naming the field when body[field] is present and not a JSON object. */
export function requireObjectField(body: unknown, field: string): void {
  if (!isPlainObject(body)) return // the schema reports a missing or malformed body itself
  const value = (body as Record<string, unknown>)[field]
  if (value !== undefined && !isPlainObject(value))
    throw validationFailed(`The field "${field}" is not valid: expected a JSON object.`)
}
