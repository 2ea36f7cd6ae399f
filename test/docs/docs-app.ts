// Test apps with the docs plugin mounted the way src/app.ts mounts it: before
// the API's plugins, plus a route registered last, so tests can prove the
// document lists routes added after the docs plugin.
import { Elysia, t } from 'elysia'
import { docsPlugin } from '../../plugins/docs/index.ts'
import { docstorePlugin } from '../../plugins/docstore/index.ts'
import { type ExampleVariant, variantPlugin } from '../../plugins/variants/index.ts'
import { bodyLimit } from '../../src/http/body-limit.ts'
import { errorHandler } from '../../src/http/error-handler.ts'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db } from '../../src/storage/db.ts'
import { testConfig } from '../docstore/harness.ts'

export const LATE_ROUTE = '/late-route'

export function fullDocsApp(deps: { db: Db; cache: Cache }) {
  return new Elysia({ normalize: false })
    .use(errorHandler)
    .use(bodyLimit)
    .use(docsPlugin({ variant: 'full' }))
    .use(docstorePlugin({ ...deps, config: testConfig() }))
    .get(LATE_ROUTE, () => ({ ok: true }), {
      response: { 200: t.Object({ ok: t.Boolean() }) },
      detail: { summary: 'Registered after every plugin' },
    })
}

export function variantDocsApp(
  variant: ExampleVariant,
  deps: { db?: Db; cache?: Cache; counters?: Cache } = {},
) {
  return new Elysia({ normalize: false })
    .use(errorHandler)
    .use(bodyLimit)
    .use(docsPlugin({ variant }))
    .use(variantPlugin(variant, { config: testConfig({ APP_VARIANT: variant }), ...deps }))
}
