// The arrows between the source folders (docs/architecture.md draws them), as
// allow-lists: a file may import its own folder, what its folder's rule
// allows, and the runtime's built-ins (`node:*`, `bun`, `bun:*`); anything
// else, a project file or an npm package, is a violation. Each rule is stated
// in its folder's README ("**May import:** ..."), and the README must list
// exactly what the rule below allows: `bun run check` runs this file as a
// script and fails on a forbidden import or on a README that disagrees, and
// test/architecture.test.ts feeds it violations.
//
// A rule governs a folder and its subfolders that have no README of their own
// (the most specific rule wins), or, at the top of src/, a group of files
// named one by one. A file no rule governs is a violation too: a new folder
// says what it may import before it imports anything.
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'

export interface ImportRule {
  /** The folder the rule governs ('src/http/'), with its subfolders that have no rule of their own. */
  folder: string
  /** For a group of files at the top of a folder: their names; the rule governs only them. */
  files?: string[]
  /** The README that states the rule ("**May import:** ..."). */
  readme: string
  /**
   * What else its files may import: project folders (ending in `/`) and files,
   * by project-relative path, and npm packages by name; `*` for anything.
   */
  mayImport: string[]
  /** What its HTTP-facing files (routes and schemas, HTTP_FACING) may import besides. */
  facing?: string[]
  /** The folder's place, said in a violation. */
  why: string
}

/** The domain's files that face HTTP: its Elysia plugins and their TypeBox schemas. */
export const HTTP_FACING = /^(routes|route-helpers|.*-routes|.*schemas?)\.ts$/

/** What every HTTP-facing file of the domain may import: Elysia, the edge, the shared route helpers. */
const DOMAIN_FACING = [
  'elysia',
  'src/http/',
  'src/conversation/route-helpers.ts',
  'src/conversation/schemas.ts',
]

const ERRORS = 'src/errors.ts'
const MESSAGES = 'src/conversation/messages.ts'

export const IMPORT_RULES: ImportRule[] = [
  {
    folder: 'src/',
    files: ['index.ts', 'startup.ts', 'shutdown-plan.ts', 'dependencies.ts', 'app.ts'],
    readme: 'src/README.md',
    mayImport: ['*'],
    why: 'the composition root builds and mounts everything',
  },
  {
    folder: 'src/',
    files: [
      'config.ts',
      'config-schema.ts',
      'models-config.ts',
      'reasoning-models.ts',
      'mcp-servers-config.ts',
      'json-setting.ts',
    ],
    readme: 'src/README.md',
    mayImport: [
      'src/storage/',
      'src/http/identity/',
      'src/tools/mcp-servers.ts',
      '@sinclair/typebox',
    ],
    why: 'the configuration is read by every layer and knows none above the stores',
  },
  {
    folder: 'src/',
    files: ['errors.ts', 'storable-text.ts', 'hmac-key.ts'],
    readme: 'src/README.md',
    mayImport: [],
    why: 'the pieces every layer shares import nothing',
  },
  {
    folder: 'src/storage/',
    readme: 'src/storage/README.md',
    mayImport: ['ioredis', 'postgres', '@electric-sql/pglite', 'lru-cache'],
    why: 'storage is the bottom layer: ports and adapters of the stores, nothing above them',
  },
  {
    folder: 'src/state/',
    readme: 'src/state/README.md',
    mayImport: ['src/storage/', 'ioredis'],
    why: 'turn state is ports and adapters over storage; it knows nothing of the domain or HTTP',
  },
  {
    folder: 'src/state/turn-log/',
    readme: 'src/state/turn-log/README.md',
    mayImport: ['src/storage/', 'ioredis'],
    why: 'the turn log is a port and its adapters over storage',
  },
  {
    folder: 'src/http/',
    readme: 'src/http/README.md',
    mayImport: [
      ERRORS,
      'src/storable-text.ts',
      'src/hmac-key.ts',
      'src/storage/db.ts',
      'src/storage/store-failure.ts',
      'src/state/state-unavailable.ts',
      'elysia',
      '@elysiajs/cors',
      'jose',
      'lru-cache',
    ],
    why: 'the HTTP edge serves every plugin and knows none of them, nor who observes it',
  },
  {
    folder: 'src/files/',
    readme: 'src/files/README.md',
    mayImport: [
      ERRORS,
      'src/hmac-key.ts',
      'src/storage/db.ts',
      'src/storage/like-pattern.ts',
      'src/tools/document-search.ts',
      'bun',
      'file-type',
      'image-size',
      'jose',
      'unpdf',
    ],
    facing: ['elysia', 'src/http/'],
    why: 'attachments get their stores as parameters and know nothing of the chat domain',
  },
  {
    folder: 'src/tools/',
    readme: 'src/tools/README.md',
    mayImport: ['@modelcontextprotocol/sdk'],
    why: 'tools are a port with MCP and built-in adapters: the data they read comes through ports',
  },
  {
    folder: 'src/observability/',
    readme: 'src/observability/README.md',
    mayImport: [
      'src/config.ts',
      'src/http/',
      'src/storage/',
      'src/conversation/turn/observer.ts',
      'elysia',
      'pino',
      'prom-client',
    ],
    why: 'observability decorates the ports it watches and writes what it sees',
  },
  {
    folder: 'src/rate-limit/',
    readme: 'src/rate-limit/README.md',
    mayImport: [
      ERRORS,
      'src/http/',
      'src/observability/',
      'src/storage/',
      'elysia',
      'lru-cache',
      'rate-limiter-flexible',
    ],
    why: 'the rate limits are a plugin of the edge over a store',
  },
  {
    folder: 'src/conversation/',
    readme: 'src/conversation/README.md',
    mayImport: [
      ERRORS,
      'src/hmac-key.ts',
      'src/state/',
      'src/storage/',
      'src/files/multimodal-message.ts',
      'jose',
    ],
    facing: ['elysia', 'src/http/', 'src/config-schema.ts'],
    why: 'the domain gets its clients as parameters; only its routes and schemas face HTTP',
  },
  {
    folder: 'src/conversation/instructions/',
    readme: 'src/conversation/instructions/README.md',
    mayImport: [ERRORS, 'src/storage/'],
    facing: DOMAIN_FACING,
    why: 'custom instructions are a store of their own',
  },
  {
    folder: 'src/conversation/management/',
    readme: 'src/conversation/management/README.md',
    mayImport: [
      ERRORS,
      'src/storable-text.ts',
      MESSAGES,
      'src/conversation/sql/',
      'src/conversation/reads/',
      'src/conversation/tree/',
      'src/conversation/instructions/',
      'src/state/',
      'src/storage/',
      'fflate',
    ],
    facing: DOMAIN_FACING,
    why: 'management works on stored conversations, beside the turn engine',
  },
  {
    folder: 'src/conversation/model/',
    readme: 'src/conversation/model/README.md',
    mayImport: ['src/storable-text.ts', 'eventsource-parser', 'gpt-tokenizer'],
    facing: ['elysia'],
    why: 'the model providers know nothing of how conversations are stored',
  },
  {
    folder: 'src/conversation/reads/',
    readme: 'src/conversation/reads/README.md',
    mayImport: [
      ERRORS,
      MESSAGES,
      'src/conversation/sql/',
      'src/conversation/tree/',
      'src/storage/',
      'lru-cache',
    ],
    why: 'cached reads sit on the SQL and the cache, below the turn engine',
  },
  {
    folder: 'src/conversation/share/',
    readme: 'src/conversation/share/README.md',
    mayImport: [
      ERRORS,
      MESSAGES,
      'src/conversation/sql/',
      'src/conversation/tree/',
      'src/storage/',
    ],
    facing: [...DOMAIN_FACING, 'src/conversation/management/management-schemas.ts'],
    why: 'shared links read the tree; they write nothing of a conversation',
  },
  {
    folder: 'src/conversation/sql/',
    readme: 'src/conversation/sql/README.md',
    mayImport: [ERRORS, MESSAGES, 'src/conversation/stream/', 'src/storage/'],
    why: 'the SQL is the bottom of the domain: statements over the Db port',
  },
  {
    folder: 'src/conversation/stream/',
    readme: 'src/conversation/stream/README.md',
    mayImport: [ERRORS, MESSAGES, 'src/hmac-key.ts', 'jose'],
    facing: ['elysia'],
    why: 'the v1 stream is encoding, pure: it knows nothing of who runs a turn',
  },
  {
    folder: 'src/conversation/tree/',
    readme: 'src/conversation/tree/README.md',
    mayImport: [MESSAGES, 'src/conversation/sql/'],
    facing: ['elysia'],
    why: "chatgpt.com's conversation object is built from rows, pure",
  },
  {
    folder: 'src/conversation/turn/',
    readme: 'src/conversation/turn/README.md',
    mayImport: [
      ERRORS,
      'src/storable-text.ts',
      MESSAGES,
      'src/conversation/input-content.ts',
      'src/conversation/sql/',
      'src/conversation/reads/',
      'src/conversation/stream/',
      'src/conversation/model/',
      'src/conversation/instructions/',
      'src/state/',
      'src/storage/',
      'src/files/multimodal-message.ts',
      'src/files/model-content.ts',
      'src/files/file-repository.ts',
      'src/tools/catalogue.ts',
    ],
    why: 'the turn engine runs on ports; nothing of HTTP',
  },
  {
    folder: 'plugins/docs/',
    readme: 'plugins/docs/README.md',
    mayImport: [ERRORS, 'src/config.ts', 'package.json', 'elysia', '@elysiajs/openapi'],
    why: 'a plugin is mounted by app.ts and uses the edge, never the domain',
  },
  {
    folder: 'plugins/docstore/',
    readme: 'plugins/docstore/README.md',
    mayImport: [
      ERRORS,
      'src/config.ts',
      'src/http/',
      'src/observability/',
      'src/storage/',
      'src/tools/document-search.ts',
      'elysia',
      '@sinclair/typebox',
    ],
    why: 'a plugin is mounted by app.ts and uses the edge and the stores, never the domain',
  },
  {
    folder: 'plugins/playground/',
    readme: 'plugins/playground/README.md',
    mayImport: ['elysia'],
    why: 'the playground is a page: it talks to the service over HTTP only',
  },
  {
    folder: 'plugins/variants/',
    readme: 'plugins/variants/README.md',
    mayImport: [
      ERRORS,
      'src/config.ts',
      'src/http/',
      'src/storage/',
      'elysia',
      '@sinclair/typebox',
    ],
    why: 'a plugin is mounted by app.ts and uses the edge and the stores, never the domain',
  },
]

/** Every module a file names in an import, export or require, static or dynamic (type-only included). */
export function importsOf(source: string): string[] {
  const found: string[] = []
  const pattern =
    /(?:^|\n)\s*(?:import|export)[^'"`;]*?from\s*['"]([^'"]+)['"]|(?:\bimport|\brequire)\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g
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

/** The runtime's own modules: not dependencies of a layer. */
const isBuiltin = (target: string) =>
  target.startsWith('node:') || target === 'bun' || target.startsWith('bun:')

/** The rule that governs `path`: its file group, else the most specific folder. */
export function ruleOf(path: string, rules = IMPORT_RULES): ImportRule | undefined {
  const name = path.slice(path.lastIndexOf('/') + 1)
  const inFolder = (rule: ImportRule) => path.startsWith(rule.folder)
  const group = rules.find(
    (rule) =>
      rule.files && dirname(path) === dirname(`${rule.folder}x`) && rule.files.includes(name),
  )
  if (group) return group
  return rules
    .filter((rule) => !rule.files && inFolder(rule))
    .sort((a, b) => b.folder.length - a.folder.length)[0]
}

/** Whether `rule` lets `path` (governed by it) import `target`. */
function allows(rule: ImportRule, path: string, target: string): boolean {
  const own = rule.files
    ? rule.files.some((name) => target === rule.folder + name)
    : target.startsWith(rule.folder)
  if (own || isBuiltin(target)) return true
  const name = path.slice(path.lastIndexOf('/') + 1)
  const allowed = [...rule.mayImport, ...(HTTP_FACING.test(name) ? (rule.facing ?? []) : [])]
  return allowed.some(
    (entry) => entry === '*' || (entry.endsWith('/') ? target.startsWith(entry) : target === entry),
  )
}

export interface Violation {
  file: string
  imports: string
  why: string
}

/** The imports of `files` (project-relative paths with their source) that their rules do not allow. */
export function violations(files: { path: string; source: string }[]): Violation[] {
  const found: Violation[] = []
  for (const { path, source } of files) {
    const rule = ruleOf(path)
    for (const spec of importsOf(source)) {
      if (!rule) {
        found.push({
          file: path,
          imports: spec,
          why: 'no rule governs this folder: give it a README saying what it may import, and a rule',
        })
        continue
      }
      if (!allows(rule, path, targetOf(path, spec)))
        found.push({
          file: path,
          imports: spec,
          why: `not in what ${rule.readme} allows (${rule.why})`,
        })
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

const MAY_IMPORT = '**May import:**'
const FACING = '**Its routes and schemas may also import:**'

/**
 * The entries a README line lists after `label`: the backquoted names of its
 * first sentence (`nothing` for none, `anything` for `*`), and the backquoted
 * names before the label (the files a group's line is about). Undefined when
 * no line carries the label and names those files.
 */
export function readmeList(
  markdown: string,
  label: string,
  files?: string[],
): string[] | undefined {
  const ticked = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '')
  for (const line of markdown.split('\n')) {
    const at = line.indexOf(label)
    if (at === -1) continue
    const about = ticked(line.slice(0, at))
    if (files ? about.join() !== files.join() : about.length > 0) continue
    const rest = line.slice(at + label.length)
    const sentence = rest.split(/\.(?:\s|$)/)[0] ?? ''
    if (/^\s*nothing\b/.test(sentence)) return []
    if (/^\s*anything\b/.test(sentence)) return ['*']
    return ticked(sentence)
  }
  return undefined
}

/** Where the READMEs and the rules disagree: a README that lists other names, or none. */
export function readmeDisagreements(root: string, rules = IMPORT_RULES): string[] {
  const found: string[] = []
  const sorted = (list: string[] | undefined) => (list ? [...list].sort().join(', ') : 'nothing')
  for (const rule of rules) {
    const path = join(root, rule.readme)
    if (!existsSync(path)) {
      found.push(`${rule.readme} is missing (it states the rule for ${rule.folder})`)
      continue
    }
    const markdown = readFileSync(path, 'utf8')
    const listed = readmeList(markdown, MAY_IMPORT, rule.files)
    if (listed === undefined || sorted(listed) !== sorted(rule.mayImport))
      found.push(
        `${rule.readme}: "May import" ${listed ? `lists ${sorted(listed)}` : 'is missing'}; the rule allows ${sorted(rule.mayImport)}`,
      )
    const facing = readmeList(markdown, FACING, rule.files)
    if (sorted(facing) !== sorted(rule.facing))
      found.push(
        `${rule.readme}: its routes and schemas may also import ${sorted(rule.facing)}; the README says ${sorted(facing)}`,
      )
  }
  const stated = new Set(rules.map((rule) => rule.readme))
  for (const readme of new Bun.Glob('{src,plugins}/**/README.md').scanSync(root))
    if (!stated.has(readme.split('\\').join('/')))
      found.push(`${readme} states no rule of scripts/import-rules.ts`)
  return found
}

if (import.meta.main) {
  const root = join(import.meta.dir, '..')
  const found = violations(projectSources(root))
  for (const { file, imports, why } of found) console.error(`${file} imports ${imports}: ${why}`)
  const disagreements = readmeDisagreements(root)
  for (const line of disagreements) console.error(line)
  if (found.length > 0 || disagreements.length > 0) process.exit(1)
  console.log(
    `import rules: ${IMPORT_RULES.length} folders' allow-lists kept, as their READMEs say`,
  )
}
