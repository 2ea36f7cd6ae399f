// What text can be stored faithfully (CONTRACT §3): no NUL character
// (Postgres text and jsonb cannot hold U+0000), no unpaired UTF-16 surrogate
// (not Unicode: the driver would store U+FFFD), no JSON nested absurdly deep.
// Pure checks, shared by the HTTP input guard (http/input-guard.ts) and the
// import of a chatgpt.com export (conversation/management/import), which
// reads its body itself; and the one replacement of what is not storable,
// for text the service did not get from a client (a model's output).

/** What stands for a character that cannot be stored. */
export const REPLACEMENT = '\uFFFD'

/** The text with every NUL and lone surrogate as U+FFFD: storable, and as close to the text as can be. */
export function toStorableText(text: string): string {
  const wellFormed = text.isWellFormed() ? text : text.toWellFormed()
  return wellFormed.includes('\u0000') ? wellFormed.replaceAll('\u0000', REPLACEMENT) : wellFormed
}

/** Deepest nesting of arrays and objects a request body may have. */
export const MAX_JSON_DEPTH = 64

export type TextProblem = 'nul' | 'surrogate' | 'depth'

export interface UnstorableText {
  /** JSON path of the offending value, e.g. `messages[0].content.parts[1]`; '' for the root. */
  path: string
  problem: TextProblem
  /** True when the bad text is a key of the object at `path`, not a value. */
  inKey: boolean
}

/** Why a string cannot be stored, or undefined when it can. */
export function textProblem(text: string): 'nul' | 'surrogate' | undefined {
  if (text.includes('\u0000')) return 'nul'
  if (!text.isWellFormed()) return 'surrogate'
  return undefined
}

const childPath = (path: string, key: string | number) =>
  typeof key === 'number' ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`

type Container = unknown[] | Record<string, unknown>

/** A container being walked: its children are visited in order, `next` first. */
interface Frame {
  container: Container
  path: string
  /** The object's keys; undefined for an array. */
  keys: string[] | undefined
  next: number
}

/**
 * The first unstorable text in a parsed JSON value, in document order (an
 * object's keys before its values), walking it without recursion (a
 * 100,000-deep array must not overflow the stack here either). A path is
 * built only for containers and for what is reported: the common case, a
 * flat object of clean strings (path and query parameters), allocates
 * nothing but its key list.
 */
export function findUnstorableText(
  value: unknown,
  maxDepth = MAX_JSON_DEPTH,
): UnstorableText | undefined {
  if (typeof value === 'string') {
    const problem = textProblem(value)
    return problem ? { path: '', problem, inKey: false } : undefined
  }
  const stack: Frame[] = []
  /** Starts walking a container, or reports it too deep or one of its keys. */
  const enter = (container: Container, path: string): UnstorableText | undefined => {
    if (stack.length >= maxDepth) return { path, problem: 'depth', inKey: false }
    if (Array.isArray(container)) {
      stack.push({ container, path, keys: undefined, next: 0 })
      return undefined
    }
    const keys = Object.keys(container)
    for (const key of keys) {
      const problem = textProblem(key)
      if (problem) return { path, problem, inKey: true }
    }
    stack.push({ container, path, keys, next: 0 })
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const rootFound = enter(value as Container, '')
  if (rootFound) return rootFound
  for (let frame = stack.at(-1); frame !== undefined; frame = stack.at(-1)) {
    const { container, keys } = frame
    const index = frame.next++
    if (index >= (keys ?? (container as unknown[])).length) {
      stack.pop()
      continue
    }
    const key = keys ? (keys[index] as string) : index
    const child = (container as Record<string | number, unknown>)[key]
    if (typeof child === 'string') {
      const problem = textProblem(child)
      if (problem) return { path: childPath(frame.path, key), problem, inKey: false }
    } else if (typeof child === 'object' && child !== null) {
      const found = enter(child as Container, childPath(frame.path, key))
      if (found) return found
    }
  }
  return undefined
}

const WHAT: Record<TextProblem, string> = {
  nul: 'a NUL character (U+0000), which cannot be stored',
  surrogate: 'an unpaired UTF-16 surrogate, which is not valid Unicode',
  depth: `arrays or objects nested more than ${MAX_JSON_DEPTH} levels deep`,
}

/** Longest field path quoted in an error (keys are the client's and may be huge). */
const MAX_SHOWN_PATH = 120

const shown = (path: string) =>
  path.length <= MAX_SHOWN_PATH ? path : `${path.slice(0, MAX_SHOWN_PATH - 1)}…`

/** The 422 sentence for a problem found in a body, a query parameter or a path parameter. */
export function describeUnstorable(found: UnstorableText, where: Where): string {
  const subject =
    found.path === ''
      ? 'The request body'
      : where === 'body'
        ? `The field "${shown(found.path)}"`
        : `The ${where} "${shown(found.path)}"`
  return `${subject} ${found.inKey ? 'has a key that contains' : 'contains'} ${WHAT[found.problem]}.`
}

export type Where = 'body' | 'query parameter' | 'path parameter'
