// The arrows between the source folders (docs/architecture.md draws them), as
// rules a folder's imports must keep, checked by `bun run check` (this file
// run as a script) and by test/architecture.test.ts. A rule names the files it
// governs by path prefix, what they may not import (a path prefix under the
// project, or an npm package), and why; HTTP-facing files of the domain
// (routes and request/response schemas) are exempt from the HTTP rule by name.
import { readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'

export interface ImportRule {
  /** Files under this path prefix follow the rule. */
  from: string
  /** Path prefixes (project-relative) or npm package names they may not import. */
  forbid: string[]
  /** Files the rule does not govern, by file name. */
  exempt?: RegExp
  why: string
}

/** The domain's files that face HTTP: its Elysia plugins and their TypeBox schemas. */
const HTTP_FACING = /^(routes|route-helpers|.*-routes|.*schemas?)\.ts$/

const EDGE_AND_DOMAIN = ['src/conversation/', 'src/http/', 'src/rate-limit/', 'plugins/', 'elysia']

export const IMPORT_RULES: ImportRule[] = [
  {
    from: 'src/storage/',
    forbid: EDGE_AND_DOMAIN,
    why: 'storage is ports and adapters: it knows nothing of the domain or of HTTP',
  },
  {
    from: 'src/state/',
    forbid: EDGE_AND_DOMAIN,
    why: 'turn state is ports and adapters: it knows nothing of the domain or of HTTP',
  },
  {
    from: 'src/conversation/',
    forbid: ['ioredis', 'postgres', '@electric-sql/pglite', 'src/dependencies.ts'],
    why: 'the domain gets its clients as parameters; only dependencies.ts builds them',
  },
  {
    from: 'src/conversation/',
    forbid: ['elysia', 'src/http/'],
    exempt: HTTP_FACING,
    why: 'the domain knows nothing of HTTP: only its routes and schemas face Elysia',
  },
  {
    from: 'src/files/',
    forbid: [
      'src/conversation/',
      'src/state/',
      'plugins/',
      'src/dependencies.ts',
      'ioredis',
      'postgres',
      '@electric-sql/pglite',
    ],
    why: 'attachments get their stores as parameters and know nothing of the chat domain',
  },
  {
    from: 'src/files/',
    forbid: ['elysia', 'src/http/'],
    exempt: HTTP_FACING,
    why: 'attachments know nothing of HTTP: only their routes and schemas face Elysia',
  },
  {
    from: 'src/tools/',
    forbid: [
      ...EDGE_AND_DOMAIN,
      'src/storage/',
      'src/state/',
      'ioredis',
      'postgres',
      '@electric-sql/pglite',
    ],
    why: 'tools are a port with MCP and built-in adapters: the data they read comes through ports',
  },
  {
    from: 'src/http/',
    forbid: ['src/conversation/', 'plugins/'],
    why: 'the HTTP edge serves every plugin and knows none of them',
  },
]

/** Every module a file names in an import or export, static or dynamic (type-only included). */
export function importsOf(source: string): string[] {
  const found: string[] = []
  const pattern =
    /(?:^|\n)\s*(?:import|export)[^'"`;]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g
  for (const match of source.matchAll(pattern)) {
    const spec = match[1] ?? match[2] ?? match[3]
    if (spec) found.push(spec)
  }
  return found
}

/** What an import names: a project-relative path for a relative one, else the package name. */
export function targetOf(file: string, spec: string): string {
  if (spec.startsWith('.'))
    return normalize(join(dirname(file), spec))
      .split('\\')
      .join('/')
  const parts = spec.split('/')
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? spec)
}

export interface Violation {
  file: string
  imports: string
  why: string
}

/** The imports of `files` (project-relative paths with their source) that break a rule. */
export function violations(files: { path: string; source: string }[]): Violation[] {
  const found: Violation[] = []
  for (const { path, source } of files) {
    const name = path.slice(path.lastIndexOf('/') + 1)
    const rules = IMPORT_RULES.filter(
      (rule) => path.startsWith(rule.from) && !rule.exempt?.test(name),
    )
    if (rules.length === 0) continue
    for (const spec of importsOf(source)) {
      const target = targetOf(path, spec)
      for (const rule of rules)
        if (rule.forbid.some((forbidden) => target === forbidden || target.startsWith(forbidden)))
          found.push({ file: path, imports: spec, why: rule.why })
    }
  }
  return found
}

/** The project's source files, read. */
export function projectSources(root: string): { path: string; source: string }[] {
  const glob = new Bun.Glob('{src,plugins}/**/*.{ts,js}')
  return Array.from(glob.scanSync(root), (path) => ({
    path: relative(root, join(root, path)).split('\\').join('/'),
    source: readFileSync(join(root, path), 'utf8'),
  })).sort((a, b) => a.path.localeCompare(b.path))
}

if (import.meta.main) {
  const found = violations(projectSources(join(import.meta.dir, '..')))
  for (const { file, imports, why } of found) console.error(`${file} imports ${imports}: ${why}`)
  if (found.length > 0) process.exit(1)
  console.log(`import rules: ${IMPORT_RULES.length} rules kept`)
}
