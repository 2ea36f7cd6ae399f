// The folders' import rules (scripts/import-rules.ts, drawn in
// docs/architecture.md) hold for the tree, and each rule would catch the
// import it forbids: a rule that can never fail would check nothing.
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import {
  IMPORT_RULES,
  importsOf,
  projectSources,
  targetOf,
  violations,
} from '../scripts/import-rules.ts'

const root = join(import.meta.dir, '..')

test('the tree keeps every import rule', () => {
  const sources = projectSources(root)
  expect(sources.length).toBeGreaterThan(100)
  expect(violations(sources)).toEqual([])
})

test('imports are read in every form, type-only and dynamic included', () => {
  const source = [
    "import { Elysia } from 'elysia'",
    "import type { Db } from '../storage/db.ts'",
    "export { x } from './x.ts'",
    "const m = await import('ioredis')",
    "import './side-effect.ts'",
    'import {\n  a,\n  b,\n} from "@electric-sql/pglite/worker"',
  ].join('\n')
  expect(importsOf(source)).toEqual([
    'elysia',
    '../storage/db.ts',
    './x.ts',
    'ioredis',
    './side-effect.ts',
    '@electric-sql/pglite/worker',
  ])
  expect(targetOf('src/conversation/turn/run.ts', '../../storage/db.ts')).toBe('src/storage/db.ts')
  expect(targetOf('src/x.ts', '@electric-sql/pglite/worker')).toBe('@electric-sql/pglite')
})

describe('each rule catches what it forbids', () => {
  const cases: [path: string, source: string][] = [
    ['src/storage/cache.ts', "import { x } from '../conversation/service.ts'"],
    ['src/state/state.ts', "import type { App } from 'elysia'"],
    ['src/conversation/turn/run.ts', "import Redis from 'ioredis'"],
    ['src/conversation/tree/tree-detail.ts', "import { Elysia } from 'elysia'"],
    ['src/conversation/sql/tree-repository.ts', "import { auth } from '../../http/auth.ts'"],
    ['src/http/cors.ts', "import { x } from '../conversation/routes.ts'"],
    ['src/files/file-store.ts', "import { x } from '../conversation/service.ts'"],
    ['src/files/folder-file-store.ts', "import { Elysia } from 'elysia'"],
    [
      'src/tools/document-search.ts',
      "import { searchDocuments } from '../../plugins/docstore/repository.ts'",
    ],
  ]
  for (const [path, source] of cases)
    test(`${path}: ${source}`, () => {
      expect(violations([{ path, source }])).toHaveLength(1)
    })

  test('routes and schemas of the domain may face Elysia and the HTTP edge', () => {
    for (const path of [
      'src/conversation/routes.ts',
      'src/conversation/management/management-routes.ts',
      'src/conversation/stream/stream-schemas.ts',
      'src/conversation/tree/detail-schema.ts',
      'src/files/files-routes.ts',
    ])
      expect(violations([{ path, source: "import { t } from 'elysia'" }])).toEqual([])
  })

  test('every rule is exercised above', () => {
    const exercised = new Set(
      cases.flatMap(([path, source]) =>
        IMPORT_RULES.filter((rule) =>
          violations([{ path, source }]).some((found) => found.why === rule.why),
        ),
      ),
    )
    expect(exercised.size).toBe(IMPORT_RULES.length)
  })
})
