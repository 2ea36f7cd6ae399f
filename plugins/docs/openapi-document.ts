// Builds the OpenAPI document of every route of the running app with
// @elysiajs/openapi's generator. One correction on the way in: the app reads
// every body with its own global parser (src/http/body-limit.ts), a function the
// generator cannot name, so it would list no content type and drop each
// request-body schema. Here a route with a body schema is described as JSON,
// which is what the service accepts.
import { toOpenAPISchema } from '@elysiajs/openapi'
import type { AnyElysia, InternalRoute } from 'elysia'

export const OPENAPI_VERSION = '3.1.2'

/** The parts of an Elysia instance the generator reads (protected in Elysia's types). */
interface RouteSource {
  getGlobalRoutes(): InternalRoute[]
  getGlobalDefinitions?(): unknown
}

type Parser = { fn?: unknown }

function describedAsJson(route: InternalRoute): InternalRoute {
  const hooks = route.hooks as { body?: unknown; parse?: Parser | Parser[] }
  if (hooks.body === undefined) return route
  const parsers = hooks.parse === undefined ? [] : [hooks.parse].flat()
  // A route that names a content type itself keeps it.
  if (parsers.some((parser) => typeof parser.fn === 'string')) return route
  return {
    ...route,
    hooks: { ...route.hooks, parse: [...parsers, { fn: 'json' }] },
  } as InternalRoute
}

export interface DocumentDescription {
  info: { title: string; version: string; description: string }
  tags: { name: string; description: string }[]
  components: Record<string, unknown>
}

/** The OpenAPI document of every route reachable from app (the whole app, for a mounted plugin). */
export function buildOpenApiDocument(app: AnyElysia, description: DocumentDescription) {
  const source = app as unknown as RouteSource
  const view = {
    getGlobalRoutes: () => source.getGlobalRoutes().map(describedAsJson),
    getGlobalDefinitions: () => source.getGlobalDefinitions?.(),
  } as unknown as AnyElysia
  const { paths, components } = toOpenAPISchema(
    view,
    undefined,
    undefined,
    undefined,
    OPENAPI_VERSION,
  )
  return {
    openapi: OPENAPI_VERSION,
    info: description.info,
    tags: description.tags,
    paths,
    components: { ...description.components, schemas: components.schemas },
  }
}
