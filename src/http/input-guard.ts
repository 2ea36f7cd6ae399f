// Refuses text that cannot be stored faithfully, in one place for every route:
// a NUL character (Postgres text and jsonb cannot hold U+0000) or an unpaired
// UTF-16 surrogate (not Unicode: the driver would store U+FFFD, so `a\ud800b`
// and `a\udc00b` became one user) anywhere in the parsed JSON body - values and
// keys - in query parameters (or a query that is not valid percent-encoded
// UTF-8) or path parameters, and JSON nested absurdly deep
// (code that recurses over it would overflow the stack). Each is a 422 naming
// the field, before any schema validation or handler runs, so nothing is stored
// and nothing is silently rewritten (CONTRACT §3).
import { Elysia } from 'elysia'
import { invalid } from '../errors.ts'
import { describeUnstorable, findUnstorableText, type Where } from '../storable-text.ts'

function check(value: unknown, where: Where) {
  const found = findUnstorableText(value)
  if (found) throw invalid(describeUnstorable(found, where))
}

/**
 * Elysia keeps a query value it cannot percent-decode (`%FF`, `%ED%A0%80`,
 * `%zz`) as the raw text, which would then be taken for a different value
 * than the one the client meant: refuse it, naming the parameter.
 */
export function checkQueryEncoding(url: string): void {
  const start = url.indexOf('?')
  if (start === -1) return
  for (const pair of url.slice(start + 1).split('&')) {
    if (!pair.includes('%')) continue
    const equals = pair.indexOf('=')
    const name = equals === -1 ? pair : pair.slice(0, equals)
    try {
      decodeURIComponent(pair)
    } catch {
      const named = name.length <= 40 && !name.includes('%') ? `"${name}"` : 'of the URL'
      throw invalid(`The query parameter ${named} is not valid percent-encoded UTF-8.`)
    }
  }
}

/**
 * The hook: runs after the body is parsed and before validation, on every
 * route of every plugin.
 */
export const inputGuard = new Elysia({ name: 'input-guard' }).onTransform(
  { as: 'global' },
  ({ body, query, params, request }) => {
    if (params) check(params, 'path parameter')
    checkQueryEncoding(request.url)
    if (query) check(query, 'query parameter')
    if (body !== undefined && body !== null) check(body, 'body')
  },
)
