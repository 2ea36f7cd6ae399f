// compose.yaml and deploy/nginx.conf, read as data (no docker engine here; CI
// also runs `docker-compose config` on compose.yaml): every service the
// "Docker Compose" section of docs/operations.md names exists and the other
// way round, app runs two or more replicas health-checked on /ready with the
// state database and no default resume secret, `lb` (nginx) is the only way
// in and balances them round robin without buffering event streams, each
// example variant runs under the `examples` profile with its APP_VARIANT, k6
// under `bench` aimed at lb, profile `sentinel` runs a replica, three
// Sentinels and the service on them, and the stores keep their data in named
// volumes.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { VARIANTS } from '../src/config.ts'

const ROOT = join(import.meta.dir, '..')

type Fields = Record<string, unknown>

function isFields(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function fields(value: unknown, what: string): Fields {
  if (!isFields(value)) throw new Error(`${what} is not a mapping`)
  return value
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : []
}

const composeText = readFileSync(join(ROOT, 'compose.yaml'), 'utf8')
const compose = fields(Bun.YAML.parse(composeText), 'compose.yaml')
const services = fields(compose.services, 'services')
const serviceNames = Object.keys(services)

function service(name: string): Fields {
  return fields(services[name], `service ${name}`)
}

/** A service's environment as a map, whichever of the two compose forms it uses. */
function environment(name: string): Record<string, string> {
  const env = service(name).environment
  if (Array.isArray(env))
    return Object.fromEntries(
      env.map(String).map((entry) => {
        const at = entry.indexOf('=')
        return at === -1 ? [entry, ''] : [entry.slice(0, at), entry.slice(at + 1)]
      }),
    )
  return Object.fromEntries(
    Object.entries(isFields(env) ? env : {}).map(([key, value]) => [key, String(value)]),
  )
}

/** One nginx directive: its name, its arguments (quotes removed) and its block, if any. */
interface Directive {
  name: string
  args: string[]
  block?: Directive[]
}

/** Parses nginx configuration text into directives (comments dropped, quotes honoured). */
function parseNginx(text: string): Directive[] {
  const tokens: string[] = []
  const pattern = /#[^\n]*|"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([{};])|([^\s{};"'#]+)/g
  for (const match of text.matchAll(pattern)) {
    if (match[0].startsWith('#')) continue
    tokens.push(match[1] ?? match[2] ?? match[3] ?? match[4] ?? '')
  }
  let at = 0
  const parseBlock = (): Directive[] => {
    const directives: Directive[] = []
    while (at < tokens.length) {
      const token = tokens[at++] ?? ''
      if (token === '}') return directives
      const args: string[] = []
      while (at < tokens.length && tokens[at] !== ';' && tokens[at] !== '{')
        args.push(tokens[at++] ?? '')
      const end = tokens[at++]
      directives.push(
        end === '{' ? { name: token, args, block: parseBlock() } : { name: token, args },
      )
    }
    return directives
  }
  return parseBlock()
}

function directives(block: Directive[] | undefined, name: string): Directive[] {
  return (block ?? []).filter((directive) => directive.name === name)
}

function only(block: Directive[] | undefined, name: string): Directive {
  const found = directives(block, name)
  if (found.length !== 1) throw new Error(`expected one ${name}, found ${found.length}`)
  return found[0] as Directive
}

/** A duration in nginx syntax (`1h`, `90s`, `3600`) in seconds. */
function seconds(value: string): number {
  const match = /^(\d+)(ms|s|m|h|d)?$/.exec(value)
  if (!match) throw new Error(`not a duration: ${value}`)
  const unit = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400 }[match[2] ?? 's'] ?? 1
  return Number(match[1]) * unit
}

/** A size in nginx syntax (`2m`, `512k`) in bytes. */
function bytes(value: string): number {
  const match = /^(\d+)([kKmMgG])?$/.exec(value)
  if (!match) throw new Error(`not a size: ${value}`)
  const unit = { k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[(match[2] ?? '').toLowerCase()] ?? 1
  return Number(match[1]) * unit
}

const nginx = parseNginx(readFileSync(join(ROOT, 'deploy', 'nginx.conf'), 'utf8'))
const http = only(nginx, 'http')
const server = only(http.block, 'server')
/** The location that proxies, and the upstream block it names. */
const proxying = directives(server.block, 'location').find(
  (location) => directives(location.block, 'proxy_pass').length > 0,
)
const proxy = only(proxying?.block, 'proxy_pass')
const upstream = directives(http.block, 'upstream').find(
  (block) => `http://${block.args[0]}` === proxy.args[0],
)
if (!upstream) throw new Error('deploy/nginx.conf: proxy_pass names no upstream block')

/** A directive's arguments where the proxying location sees it: its own, else the server's, else http's. */
function setting(name: string): string[] | undefined {
  for (const block of [proxying?.block, server.block, http.block]) {
    const found = directives(block, name)
    if (found.length > 0) return found[found.length - 1]?.args
  }
  return undefined
}

/** The value the proxying location sets for a request header sent upstream. */
function header(name: string): string | undefined {
  const sets = directives(proxying?.block, 'proxy_set_header')
  return sets.find((entry) => entry.args[0]?.toLowerCase() === name.toLowerCase())?.args[1]
}

/** The port lb listens on inside its container (compose publishes it). */
const lbPort = Number(only(server.block, 'listen').args[0])

/** The operator's guide, where compose's services are described. */
const OPERATIONS_DOC = 'docs/operations.md'

/** The service names in the first column of the tables of the guide's "Docker Compose" section. */
function documentedServices(): string[] {
  const guide = readFileSync(join(ROOT, OPERATIONS_DOC), 'utf8')
  const start = guide.search(/^## Docker Compose\s*$/m)
  if (start === -1) throw new Error(`${OPERATIONS_DOC} has no "## Docker Compose" section`)
  const rest = guide.slice(start + 1)
  const next = rest.search(/^## /m)
  const section = next === -1 ? rest : rest.slice(0, next)
  return [...section.matchAll(/^\|\s*`([a-z0-9-]+)`\s*\|/gm)].map((match) => match[1] ?? '')
}

describe('compose.yaml and docs/operations.md', () => {
  test('every service the guide names exists, and the guide names every service', () => {
    const named = documentedServices()
    expect(named.length).toBeGreaterThan(0)
    for (const name of named) expect(serviceNames).toContain(name)
    for (const name of serviceNames) expect(named).toContain(name)
  })
})

describe('compose.yaml: app', () => {
  test('is built from the Dockerfile on the official Bun image', () => {
    expect(service('app').build).toBeDefined()
    expect(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).toMatch(/^FROM oven\/bun:/m)
  })

  test('has a health check on /ready (not /health: a draining replica must leave the rotation)', () => {
    const healthcheck = fields(service('app').healthcheck, 'app.healthcheck')
    expect(strings(healthcheck.test).join(' ')).toContain('http://127.0.0.1:3000/ready')
  })

  test('passes LOG_LEVEL and the RATE_LIMIT_* variables through', () => {
    const env = environment('app')
    for (const name of [
      'LOG_LEVEL',
      'RATE_LIMIT_SENDS',
      'RATE_LIMIT_REQUESTS',
      'RATE_LIMIT_WINDOW_SECONDS',
    ])
      expect(env[name]).toStartWith(`\${${name}:-`)
  })

  test('gets DATABASE_URL, REDIS_URL and the state database REDIS_STATE_URL', () => {
    const env = environment('app')
    expect(env.DATABASE_URL).toStartWith('postgres://')
    expect(env.DATABASE_URL).toContain('@postgres:')
    expect(env.REDIS_URL).toStartWith('redis://redis:')
    // Database 1: `DELETE /cache` flushes REDIS_URL's database (0) only.
    expect(env.REDIS_STATE_URL).toBe('redis://redis:6379/1')
    expect(new URL(env.REDIS_STATE_URL ?? '').pathname).not.toBe(
      new URL(env.REDIS_URL ?? '').pathname,
    )
    expect(env.APP_VARIANT).toBe('full')
  })

  test('passes RESUME_TOKEN_SECRET through without a default', () => {
    // Unset, the replicas share a secret generated in the state store.
    expect(environment('app').RESUME_TOKEN_SECRET).toBe(`\${RESUME_TOKEN_SECRET:-}`)
    expect(composeText).not.toMatch(/RESUME_TOKEN_SECRET:-[^}]/)
  })

  test('stops gracefully: SIGTERM, longer grace than the 30 s drain', () => {
    const app = service('app')
    expect(app.stop_signal ?? 'SIGTERM').toBe('SIGTERM')
    expect(String(app.stop_grace_period)).toMatch(/^(3[1-9]|[4-9]\d|\d{3,})s$/)
  })

  test('runs two or more replicas, none pinned: no container_name, no published port', () => {
    const deploy = fields(service('app').deploy, 'app.deploy')
    expect(Number(deploy.replicas)).toBeGreaterThanOrEqual(2)
    // `scale` and `deploy.replicas` together are an error in docker-compose 1.29.
    expect(service('app').scale).toBeUndefined()
    for (const name of serviceNames) expect(service(name).container_name).toBeUndefined()
    expect(service('app').ports).toBeUndefined()
  })

  test('waits for healthy stores', () => {
    const dependsOn = fields(service('app').depends_on, 'app.depends_on')
    for (const store of ['postgres', 'redis'])
      expect(fields(dependsOn[store], store).condition).toBe('service_healthy')
  })
})

describe('compose.yaml: examples and k6', () => {
  const examples = VARIANTS.filter((variant) => variant !== 'full')

  test.each(examples)('the %s variant runs the app image under profile examples', (variant) => {
    const names = serviceNames.filter((name) => environment(name).APP_VARIANT === variant)
    expect(names).toHaveLength(1)
    const name = names[0] ?? ''
    expect(strings(service(name).profiles)).toEqual(['examples'])
    expect(service(name).image).toBe(service('app').image)
    expect(strings(fields(service(name).healthcheck, 'healthcheck').test).join(' ')).toContain(
      '/ready',
    )
  })

  test('k6 is the official image under profile bench, aimed at lb', () => {
    const k6 = service('k6')
    expect(String(k6.image)).toMatch(/^grafana\/k6:/)
    expect(strings(k6.profiles)).toEqual(['bench'])
    expect(environment('k6').BASE_URL).toBe(`http://lb:${lbPort}`)
    const dependsOn = fields(k6.depends_on, 'k6.depends_on')
    expect(fields(dependsOn.lb, 'lb').condition).toBe('service_healthy')
    expect(strings(k6.volumes).some((volume) => volume.startsWith('./bench/'))).toBe(true)
  })

  test('only the examples, k6 and the Sentinel deployment sit behind a profile', () => {
    const profiled = serviceNames.filter((name) => service(name).profiles !== undefined)
    expect(profiled.sort()).toEqual(
      [
        ...serviceNames.filter((name) => name.startsWith('example-')),
        'k6',
        ...SENTINEL_PROFILE,
      ].sort(),
    )
  })
})

/** The services of profile `sentinel`. */
const SENTINEL_PROFILE = ['redis-replica', 'sentinel-1', 'sentinel-2', 'sentinel-3', 'app-sentinel']

describe('compose.yaml: profile sentinel', () => {
  const sentinels = SENTINEL_PROFILE.filter((name) => name.startsWith('sentinel-'))
  /** The `sentinel monitor <name> <host> <port> <quorum>` line a Sentinel is started with. */
  const monitor = (name: string) =>
    /sentinel monitor (\S+) (\S+) (\d+) (\d+)/.exec(strings(service(name).command).join(' '))

  test('every service of it runs under profile sentinel only', () => {
    for (const name of SENTINEL_PROFILE)
      expect(strings(service(name).profiles)).toEqual(['sentinel'])
  })

  test('redis-replica replicates redis, named by its service', () => {
    const command = strings(service('redis-replica').command).join(' ')
    expect(String(service('redis-replica').image)).toMatch(/^redis:/)
    expect(command).toContain('--replicaof redis 6379')
    expect(command).toContain('--replica-announce-ip redis-replica')
  })

  test('three Sentinels watch redis under one name, a majority deciding a failover', () => {
    expect(sentinels).toHaveLength(3)
    for (const name of sentinels) {
      expect(String(service(name).image)).toMatch(/^redis:/)
      expect(strings(service(name).command).join(' ')).toContain('redis-sentinel')
      const [, primary, host, port, quorum] = monitor(name) ?? []
      expect([primary, host, port]).toEqual(['conduit', 'redis', '6379'])
      expect(Number(quorum)).toBe(2)
    }
  })

  test('app-sentinel is the full service on the Sentinels, not on REDIS_URL', () => {
    const env = environment('app-sentinel')
    expect(service('app-sentinel').image).toBe(service('app').image)
    expect(env.APP_VARIANT).toBe('full')
    expect(env.REDIS_SENTINELS?.split(',').sort()).toEqual(sentinels.map((name) => `${name}:26379`))
    expect(env.REDIS_SENTINEL_NAME).toBe(monitor('sentinel-1')?.[1])
    expect(env.REDIS_URL).toBeUndefined()
    expect(env.REDIS_STATE_URL).toBeUndefined()
    expect(env.RESUME_TOKEN_SECRET).toBe(`\${RESUME_TOKEN_SECRET:-}`)
    const healthcheck = fields(service('app-sentinel').healthcheck, 'app-sentinel.healthcheck')
    expect(strings(healthcheck.test).join(' ')).toContain('/ready')
    const dependsOn = fields(service('app-sentinel').depends_on, 'app-sentinel.depends_on')
    for (const store of ['postgres', ...sentinels])
      expect(fields(dependsOn[store], store).condition).toBe('service_healthy')
  })
})

describe('compose.yaml: lb', () => {
  const lb = service('lb')

  test('is the official nginx image with deploy/nginx.conf as its configuration', () => {
    expect(String(lb.image)).toMatch(/^nginx:/)
    expect(strings(lb.volumes)).toContain('./deploy/nginx.conf:/etc/nginx/nginx.conf:ro')
  })

  test('is published on the range app used to use, and is the only way to app', () => {
    const ports = strings(lb.ports)
    expect(ports).toEqual([`\${HOST_BIND:-127.0.0.1}:\${APP_PORTS:-3000-3009}:${lbPort}`])
  })

  test('has a health check through the proxy and waits for a healthy app', () => {
    const healthcheck = fields(lb.healthcheck, 'lb.healthcheck')
    expect(strings(healthcheck.test).join(' ')).toContain('http://127.0.0.1/ready')
    const dependsOn = fields(lb.depends_on, 'lb.depends_on')
    expect(fields(dependsOn.app, 'app').condition).toBe('service_healthy')
  })

  test('stops gracefully, giving open streams longer than its own shutdown timeout', () => {
    expect(lb.stop_signal).toBe('SIGQUIT')
    const timeout = only(nginx, 'worker_shutdown_timeout').args[0] ?? ''
    expect(Number.parseInt(String(lb.stop_grace_period), 10)).toBeGreaterThan(seconds(timeout))
  })

  test('runs nginx 1.27.3 or later, which has `server ... resolve`', () => {
    // The tag, or the default of the variable that names it: nginx:${NGINX_VERSION:-1.28}.
    const tag = /^nginx:(?:\$\{[A-Z_]+:-)?(\d+)\.(\d+)(?:\.(\d+))?/.exec(String(lb.image))
    expect(tag).not.toBeNull()
    const [major = 0, minor = 0, patch = 0] = [1, 2, 3].map((at) => Number(tag?.[at] ?? 0))
    expect(major * 1e6 + minor * 1e3 + patch).toBeGreaterThanOrEqual(1_027_003)
  })
})

describe('deploy/nginx.conf', () => {
  test('listens on a bare port (every address of its container), the one compose publishes', () => {
    expect(only(server.block, 'listen').args[0]).toMatch(/^\d+$/)
    expect(strings(service('lb').ports)[0]).toEndWith(`:${lbPort}`)
  })

  test('proxies to the app service, round robin, with no stickiness', () => {
    expect(proxy.args).toEqual([`http://${upstream.args[0]}`])
    const servers = directives(upstream.block, 'server')
    expect(servers.map((entry) => entry.args[0])).toEqual(['app:3000'])
    for (const sticky of ['ip_hash', 'hash', 'sticky', 'least_conn', 'random'])
      expect(directives(upstream.block, sticky)).toEqual([])
  })

  test('re-resolves the replicas through Docker DNS', () => {
    const resolver = only(http.block, 'resolver').args
    expect(resolver[0]).toBe('127.0.0.11')
    const valid = resolver.find((arg) => arg.startsWith('valid='))?.slice('valid='.length) ?? ''
    expect(seconds(valid)).toBeLessThanOrEqual(30)
    // `resolve` keeps the upstream's addresses in step with DNS; it needs a shared zone.
    expect(only(upstream.block, 'server').args).toContain('resolve')
    expect(directives(upstream.block, 'zone')).toHaveLength(1)
  })

  test('is SSE-safe: no buffering, no cache, HTTP/1.1 with an empty Connection, long reads', () => {
    expect(setting('proxy_buffering')).toEqual(['off'])
    expect(setting('proxy_cache')).toEqual(['off'])
    expect(setting('gzip') ?? ['off']).toEqual(['off'])
    expect(setting('proxy_http_version')).toEqual(['1.1'])
    expect(header('Connection')).toBe('')
    expect(seconds(setting('proxy_read_timeout')?.[0] ?? '60s')).toBeGreaterThanOrEqual(3600)
  })

  test('lets a body just over 1 MB through so the service answers 413 itself', () => {
    const limit = bytes(setting('client_max_body_size')?.[0] ?? '1m')
    expect(limit).toBeGreaterThan(1024 * 1024)
    expect(limit).toBeLessThanOrEqual(8 * 1024 * 1024)
  })

  test('forwards X-Request-Id and X-Forwarded-For, and retries no POST', () => {
    expect(header('X-Request-Id')).toMatch(/^\$/)
    expect(header('X-Forwarded-For')).toBe('$proxy_add_x_forwarded_for')
    expect(setting('proxy_next_upstream') ?? []).not.toContain('non_idempotent')
  })

  test('answers its own errors as JSON in the service shape', () => {
    const named = directives(server.block, 'location').filter((l) => l.args[0]?.startsWith('@'))
    expect(named.length).toBeGreaterThan(0)
    for (const location of named) {
      expect(only(location.block, 'default_type').args).toEqual(['application/json'])
      const body = JSON.parse(only(location.block, 'return').args[1] ?? '') as Fields
      expect(Object.keys(body).sort()).toEqual(['code', 'detail'])
    }
  })
})

describe('compose.yaml: stores', () => {
  const volumes = fields(compose.volumes, 'volumes')

  test.each([
    ['postgres', /^postgres:/, '/var/lib/postgresql/data'],
    ['redis', /^redis:/, '/data'],
  ])('%s: official image, health check, named volume', (name, image, path) => {
    const store = service(name)
    expect(String(store.image)).toMatch(image)
    expect(strings(fields(store.healthcheck, 'healthcheck').test).length).toBeGreaterThan(1)
    const mount = strings(store.volumes).find((volume) => volume.endsWith(`:${path}`))
    const source = mount?.split(':')[0] ?? ''
    expect(Object.keys(volumes)).toContain(source)
  })
})
