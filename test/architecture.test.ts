// The folders' import rules (scripts/import-rules.ts, drawn in
// docs/architecture.md) hold for the tree, each folder's README says exactly
// what its rule allows, and the checker catches what it should: a scratch list
// of forbidden imports, one of each kind, is reported import by import, every
// rule refuses what it does not list, and a scratch copy of the tree with
// forbidden imports added fails `bun scripts/import-rules.ts` naming each.
import { afterAll, describe, expect, test } from 'bun:test'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import {
  IMPORT_RULES,
  importsOf,
  projectSources,
  readmeDisagreements,
  readmeList,
  ruleOf,
  targetOf,
  violations,
} from '../scripts/import-rules.ts'

const root = join(import.meta.dir, '..')

/** How `path` would name `target` in an import: relative for a project file, else as it is. */
function specTo(path: string, target: string): string {
  if (!target.startsWith('src/') && !target.startsWith('plugins/')) return target
  const spec = relative(dirname(path), target)
  return spec.startsWith('.') ? spec : `./${spec}`
}

const importing = (path: string, target: string) => ({
  path,
  source: `import { x } from '${specTo(path, target)}'`,
})

test('the tree keeps every import rule, and every README says what its rule allows', () => {
  const sources = projectSources(root)
  expect(sources.length).toBeGreaterThan(100)
  expect(violations(sources)).toEqual([])
  expect(readmeDisagreements(root)).toEqual([])
})

test('every source file is governed by a rule', () => {
  const ungoverned = projectSources(root)
    .map(({ path }) => path)
    .filter((path) => ruleOf(path) === undefined)
  expect(ungoverned).toEqual([])
})

test('imports are read in every form, type-only, dynamic and required included', () => {
  const source = [
    "import { Elysia } from 'elysia'",
    "import type { Db } from '../storage/db.ts'",
    "export { x } from './x.ts'",
    "export * from './all.ts'",
    "const m = await import('ioredis')",
    "const p = require('postgres')",
    "import './side-effect.ts'",
    "import lua from './scripts/open.lua' with { type: 'text' }",
    'import {\n  a,\n  b,\n} from "@electric-sql/pglite/worker"',
  ].join('\n')
  expect(importsOf(source)).toEqual([
    'elysia',
    '../storage/db.ts',
    './x.ts',
    './all.ts',
    'ioredis',
    'postgres',
    './side-effect.ts',
    './scripts/open.lua',
    '@electric-sql/pglite/worker',
  ])
  expect(targetOf('src/conversation/turn/lifecycle.ts', '../../storage/db.ts')).toBe(
    'src/storage/db.ts',
  )
  expect(targetOf('src/x.ts', '@electric-sql/pglite/worker')).toBe('@electric-sql/pglite')
})

describe('forbidden imports, one of each kind, are each reported', () => {
  // [kind, file, what it imports]: the five upward arrows of issue #30 and
  // the arrows every README forbids.
  const scratch: [kind: string, path: string, target: string][] = [
    ['the edge imports observability', 'src/http/cors.ts', 'src/observability/logger.ts'],
    ['storage imports state', 'src/storage/redis-cache.ts', 'src/state/state.ts'],
    [
      'the configuration imports the domain',
      'src/models-config.ts',
      'src/conversation/model/catalogue.ts',
    ],
    [
      'the stream imports the service',
      'src/conversation/stream/sse-response.ts',
      'src/conversation/service.ts',
    ],
    ['the edge imports the domain', 'src/http/auth.ts', 'src/conversation/routes.ts'],
    ['the edge imports a plugin', 'src/http/readiness.ts', 'plugins/docstore/index.ts'],
    ['storage imports the domain', 'src/storage/cache.ts', 'src/conversation/service.ts'],
    ['state imports Elysia', 'src/state/state.ts', 'elysia'],
    [
      'the turn log imports the domain',
      'src/state/turn-log/redis-turn-logs.ts',
      'src/conversation/turn/lifecycle.ts',
    ],
    ['the domain imports a Redis client', 'src/conversation/turn/lifecycle.ts', 'ioredis'],
    ['the domain imports a database client', 'src/conversation/sql/tree-repository.ts', 'postgres'],
    [
      'the domain imports the composition root',
      'src/conversation/service.ts',
      'src/dependencies.ts',
    ],
    [
      'a domain file that is no route imports Elysia',
      'src/conversation/tree/tree-detail.ts',
      'elysia',
    ],
    [
      'a domain file that is no route imports the edge',
      'src/conversation/sql/turn-repository.ts',
      'src/http/auth.ts',
    ],
    [
      'the SQL imports the turn engine',
      'src/conversation/sql/turn-repository.ts',
      'src/conversation/turn/runner.ts',
    ],
    ['the model providers import storage', 'src/conversation/model/openai.ts', 'src/storage/db.ts'],
    ['a shared piece imports a layer', 'src/errors.ts', 'src/storage/db.ts'],
    ['a plugin imports the domain', 'plugins/variants/counter.ts', 'src/conversation/service.ts'],
    ['the playground imports the stores', 'plugins/playground/index.ts', 'src/storage/cache.ts'],
    ['a folder with no rule imports anything', 'src/tools/mcp-client.ts', 'src/errors.ts'],
  ]

  for (const [kind, path, target] of scratch)
    test(`${kind}: ${path} -> ${target}`, () => {
      const found = violations([importing(path, target)])
      expect(found).toHaveLength(1)
      expect(found[0]?.file).toBe(path)
      expect(found[0]?.imports).toBe(specTo(path, target))
    })

  test('fed together, each of them is reported, not only the first', () => {
    const found = violations(scratch.map(([, path, target]) => importing(path, target)))
    expect(found.map(({ file, imports }) => `${file} ${imports}`)).toEqual(
      scratch.map(([, path, target]) => `${path} ${specTo(path, target)}`),
    )
  })
})

describe('what the rules allow is not reported', () => {
  const allowed: [path: string, target: string][] = [
    ['src/conversation/routes.ts', 'elysia'],
    ['src/conversation/management/management-routes.ts', 'src/http/auth.ts'],
    ['src/conversation/stream/stream-schemas.ts', 'elysia'],
    ['src/conversation/tree/detail-schema.ts', 'elysia'],
    ['src/conversation/turn/lifecycle.ts', 'src/conversation/turn/runner.ts'],
    ['src/conversation/management/import/importer.ts', 'src/conversation/instructions/store.ts'],
    ['src/state/state.ts', 'src/state/turn-log/redis-turn-logs.ts'],
    ['src/state/turn-log/redis-turn-logs.ts', 'src/storage/keyspace.ts'],
    ['src/state/turn-log/redis-turn-log-scripts.ts', 'src/state/turn-log/scripts/open.lua'],
    ['src/storage/redis-cache.ts', 'ioredis'],
    ['src/storage/data-dir-lock.ts', 'bun:ffi'],
    ['src/conversation/turn/lifecycle.ts', 'node:crypto'],
    ['src/dependencies.ts', 'src/conversation/service.ts'],
    ['src/config.ts', 'src/models-config.ts'],
  ]
  for (const [path, target] of allowed)
    test(`${path} -> ${target}`, () => {
      expect(violations([importing(path, target)])).toEqual([])
    })
})

test('every rule refuses a client library it does not list and the composition root', () => {
  for (const rule of IMPORT_RULES) {
    if (rule.mayImport.includes('*')) continue
    const path = `${rule.folder}${rule.files?.[0] ?? 'probe.ts'}`
    expect(ruleOf(path)).toBe(rule)
    for (const target of ['src/dependencies.ts', 'pg'])
      expect(violations([importing(path, target)]).map((found) => found.why)).toEqual([
        expect.stringContaining(rule.readme),
      ])
  }
})

describe('a README that says other than its rule is reported', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'import-rules-'))
  afterAll(() => rmSync(scratch, { recursive: true, force: true }))
  const rule = IMPORT_RULES.find((each) => each.folder === 'src/conversation/stream/')
  if (!rule) throw new Error('the stream folder has a rule')
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(scratch, path)), { recursive: true })
    writeFileSync(join(scratch, path), text)
  }
  const original = readFileSync(join(root, rule.readme), 'utf8')

  test('the README as it is agrees', () => {
    write(rule.readme, original)
    expect(readmeDisagreements(scratch, [rule])).toEqual([])
    expect(readmeList(original, '**May import:**')?.sort()).toEqual([...rule.mayImport].sort())
  })

  test('one that lists more than the rule allows', () => {
    write(rule.readme, original.replace('`jose`', '`jose`, `src/conversation/service.ts`'))
    expect(readmeDisagreements(scratch, [rule])).toEqual([
      expect.stringContaining('src/conversation/service.ts'),
    ])
  })

  test('one that lists less, or no line at all', () => {
    write(rule.readme, original.replace(', `jose`', ''))
    expect(readmeDisagreements(scratch, [rule])).toHaveLength(1)
    write(rule.readme, '# src/conversation/stream/\n\nNo rule here.\n')
    expect(readmeDisagreements(scratch, [rule])).toHaveLength(2)
  })

  test('a missing README, and a README no rule states', () => {
    rmSync(join(scratch, rule.readme))
    write('src/tools/README.md', '**May import:** `src/storage/`.\n')
    expect(readmeDisagreements(scratch, [rule])).toEqual([
      expect.stringContaining(`${rule.readme} is missing`),
      expect.stringContaining('src/tools/README.md states no rule'),
    ])
  })
})

test('a scratch copy of the tree with nine forbidden imports added fails the script, naming each', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'import-rules-tree-'))
  try {
    for (const folder of ['src', 'plugins', 'scripts'])
      cpSync(join(root, folder), join(scratch, folder), { recursive: true })
    const added: [path: string, target: string][] = [
      ['src/http/cors.ts', 'src/observability/metrics.ts'],
      ['src/storage/redis-cache.ts', 'src/state/conversation-leases.ts'],
      ['src/models-config.ts', 'src/conversation/model/provider.ts'],
      ['src/conversation/stream/sse-response.ts', 'src/conversation/service.ts'],
      ['src/state/state.ts', 'src/http/auth.ts'],
      ['src/conversation/turn/lifecycle.ts', 'ioredis'],
      ['src/conversation/tree/tree-detail.ts', 'elysia'],
      ['src/http/readiness.ts', 'src/conversation/routes.ts'],
      ['src/conversation/sql/turn-repository.ts', 'src/conversation/turn/runner.ts'],
    ]
    for (const [path, target] of added) {
      const file = join(scratch, path)
      writeFileSync(
        file,
        `import type { x } from '${specTo(path, target)}'\n${readFileSync(file, 'utf8')}`,
      )
    }
    const run = Bun.spawnSync(['bun', join(scratch, 'scripts/import-rules.ts')], {
      cwd: scratch,
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const report = run.stderr.toString()
    expect(run.exitCode).toBe(1)
    for (const [path, target] of added)
      expect(report).toContain(`${path} imports ${specTo(path, target)}:`)
    expect(report.trim().split('\n')).toHaveLength(added.length)
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
})
