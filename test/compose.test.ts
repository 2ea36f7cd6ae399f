// compose.yaml, read as data (no docker engine here; CI also runs
// `docker-compose config` on it): every service README.md's "Docker Compose"
// section names exists and the other way round, app is health-checked on
// /health and free to scale, each example variant runs under the `examples`
// profile with its APP_VARIANT, k6 under `bench`, and the stores keep their
// data in named volumes.
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

const compose = fields(
  Bun.YAML.parse(readFileSync(join(ROOT, 'compose.yaml'), 'utf8')),
  'compose.yaml',
)
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

/** The service names in the first column of the tables of README.md's "Docker Compose" section. */
function readmeServices(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const start = readme.search(/^## Docker Compose\s*$/m)
  if (start === -1) throw new Error('README.md has no "## Docker Compose" section')
  const rest = readme.slice(start + 1)
  const next = rest.search(/^## /m)
  const section = next === -1 ? rest : rest.slice(0, next)
  return [...section.matchAll(/^\|\s*`([a-z0-9-]+)`\s*\|/gm)].map((match) => match[1] ?? '')
}

describe('compose.yaml and the README', () => {
  test('every service the README names exists, and the README names every service', () => {
    const named = readmeServices()
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

  test('has a health check on /health', () => {
    const healthcheck = fields(service('app').healthcheck, 'app.healthcheck')
    expect(strings(healthcheck.test).join(' ')).toContain('/health')
  })

  test('gets DATABASE_URL, REDIS_URL and a RESUME_TOKEN_SECRET shared through the environment', () => {
    const env = environment('app')
    expect(env.DATABASE_URL).toStartWith('postgres://')
    expect(env.DATABASE_URL).toContain('@postgres:')
    expect(env.REDIS_URL).toStartWith('redis://redis:')
    expect(env.RESUME_TOKEN_SECRET).toContain('${RESUME_TOKEN_SECRET')
    expect(env.APP_VARIANT).toBe('full')
  })

  test('stops gracefully: SIGTERM, longer grace than the 30 s drain', () => {
    const app = service('app')
    expect(app.stop_signal ?? 'SIGTERM').toBe('SIGTERM')
    expect(String(app.stop_grace_period)).toMatch(/^(3[1-9]|[4-9]\d|\d{3,})s$/)
  })

  test('nothing prevents a second replica: no container_name, no single fixed host port', () => {
    for (const name of serviceNames) expect(service(name).container_name).toBeUndefined()
    const ports = strings(service('app').ports)
    expect(ports.length).toBeGreaterThan(0)
    for (const port of ports) {
      const host = port.split(':').slice(0, -1).join(':')
      expect(host).toMatch(/\$\{[A-Z_]+:-[^}]*-[^}]*\}|\d+-\d+/)
    }
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
      '/health',
    )
  })

  test('k6 is the official image under profile bench, aimed at app', () => {
    const k6 = service('k6')
    expect(String(k6.image)).toMatch(/^grafana\/k6:/)
    expect(strings(k6.profiles)).toEqual(['bench'])
    expect(environment('k6').BASE_URL).toBe('http://app:3000')
    expect(strings(k6.volumes).some((volume) => volume.startsWith('./bench/'))).toBe(true)
  })

  test('only the examples and k6 sit behind a profile', () => {
    const profiled = serviceNames.filter((name) => service(name).profiles !== undefined)
    expect(profiled.sort()).toEqual(
      [...serviceNames.filter((name) => name.startsWith('example-')), 'k6'].sort(),
    )
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
