// Parses the query strings of the conversation API's GET routes (CONTRACT
// §4.5, §9, §11) with messages that name the parameter: a known parameter out
// of range is a 422; unknown parameters are ignored, as real clients send many.
import { invalid } from '../../errors.ts'
import type { ListOrder, ListPage } from './list-cache.ts'

/** A whole number from min to max; `fallback` when absent. */
export function wholeNumber(
  name: string,
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (raw === undefined) return fallback
  if (!/^\d{1,9}$/.test(raw)) throw invalid(`The query parameter "${name}" must be a whole number.`)
  const value = Number(raw)
  if (value < min || value > max)
    throw invalid(`The query parameter "${name}" must be between ${min} and ${max}.`)
  return value
}

function oneOf<T extends string>(name: string, raw: string | undefined, values: readonly T[]): T {
  const value = raw ?? values[0]
  if (value === undefined || !(values as readonly string[]).includes(value))
    throw invalid(
      `The query parameter "${name}" must be ${values.map((v) => `"${v}"`).join(' or ')}.`,
    )
  return value as T
}

export function parseListQuery(query: {
  offset?: string
  limit?: string
  order?: string
  is_archived?: string
}): ListPage {
  return {
    offset: wholeNumber('offset', query.offset, 0, 0, 1_000_000_000),
    limit: wholeNumber('limit', query.limit, 20, 1, 100),
    order: oneOf<ListOrder>('order', query.order, ['updated', 'created']),
    archived: oneOf('is_archived', query.is_archived, ['false', 'true']) === 'true',
  }
}
