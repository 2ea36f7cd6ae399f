// Parses the conversation list's query (CONTRACT §4.5) with messages that name
// the parameter; anything out of range is a 422.
import { validationFailed } from '../errors.ts'
import type { ListOrder, ListPage } from './list-cache.ts'

function whole(name: string, raw: string | undefined, fallback: number, min: number, max: number) {
  if (raw === undefined) return fallback
  if (!/^\d{1,9}$/.test(raw))
    throw validationFailed(`The query parameter "${name}" must be a whole number.`)
  const value = Number(raw)
  if (value < min || value > max)
    throw validationFailed(`The query parameter "${name}" must be between ${min} and ${max}.`)
  return value
}

export function parseListQuery(query: {
  offset?: string
  limit?: string
  order?: string
}): ListPage {
  const order = query.order ?? 'updated'
  if (order !== 'updated' && order !== 'created')
    throw validationFailed('The query parameter "order" must be "updated" or "created".')
  return {
    offset: whole('offset', query.offset, 0, 0, 1_000_000_000),
    limit: whole('limit', query.limit, 20, 1, 100),
    order: order as ListOrder,
  }
}
