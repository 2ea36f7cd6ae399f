// Reading the fields of an imported conversations.json with errors that name
// the first bad one by its path in the file (`[3].mapping.abc.message.author.role`),
// as CONTRACT §3 and §17 ask: a wrong type is a 422 saying what was expected.
// Also the check that what is kept can be stored faithfully (no NUL, no lone
// surrogate, no absurd nesting), reported the same way.
import { invalid } from '../../../errors.ts'
import { describeUnstorable, findUnstorableText } from '../../../storable-text.ts'

/** Longest path quoted in an error: keys come from the file and may be huge. */
const MAX_SHOWN_PATH = 160

export type Fields = Record<string, unknown>

export const childPath = (path: string, key: string | number) =>
  typeof key === 'number' ? `${path}[${key}]` : `${path}.${key}`

const shown = (path: string) =>
  path.length <= MAX_SHOWN_PATH ? path : `${path.slice(0, MAX_SHOWN_PATH - 1)}…`

/** The 422 for the field at `path`, which `what` completes ("must be a string"). */
export const badField = (path: string, what: string) =>
  invalid(`The field "${shown(path)}" of the file ${what}.`)

export function objectAt(value: unknown, path: string): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw badField(path, 'must be an object')
  return value as Fields
}

export function arrayAt(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw badField(path, 'must be an array')
  return value
}

export function textAt(value: unknown, path: string, maxLength = Number.POSITIVE_INFINITY): string {
  if (typeof value !== 'string') throw badField(path, 'must be a string')
  if (value.length > maxLength) throw badField(path, `must be at most ${maxLength} characters`)
  return value
}

export function booleanAt(value: unknown, path: string): boolean {
  if (typeof value !== 'boolean') throw badField(path, 'must be true or false')
  return value
}

export function numberAt(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw badField(path, 'must be a number')
  return value
}

/** Latest time accepted: year 5138, far past any real export, well inside a Date. */
const MAX_SECONDS = 1e11

/** Unix seconds, or null. */
export function secondsAt(value: unknown, path: string): number | null {
  if (value === null) return null
  const seconds = numberAt(value, path)
  if (seconds < 0 || seconds > MAX_SECONDS)
    throw badField(path, 'must be a time in Unix seconds (0 or more)')
  return seconds
}

/** `read` of `fields[key]`, or `fallback` when the key is absent. */
export function optional<T>(
  fields: Fields,
  key: string,
  path: string,
  read: (value: unknown, path: string) => T,
  fallback: T,
): T {
  const value = fields[key]
  return value === undefined ? fallback : read(value, childPath(path, key))
}

export const nullable =
  <T>(read: (value: unknown, path: string) => T) =>
  (value: unknown, path: string): T | null =>
    value === null ? null : read(value, path)

/** Refuses what the database cannot hold as it was given, naming where it is. */
export function checkStorable(value: unknown, path: string): void {
  const found = findUnstorableText(value)
  if (!found) return
  const at =
    found.path === ''
      ? path
      : found.path.startsWith('[')
        ? path + found.path
        : `${path}.${found.path}`
  throw invalid(describeUnstorable({ ...found, path: shown(at) }, 'body'))
}
