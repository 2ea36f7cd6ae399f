// A seeded generator of bad requests for every input route of the full app:
// each request starts from a valid one and is broken in one way that must be
// refused (a bad string leaf, a wrong type, a missing required field, broken
// or non-UTF-8 JSON, absurd nesting, out-of-range numbers, bad credentials).
// The same seed yields the same requests, so a failure reproduces.

/** mulberry32: a small, fast, seedable PRNG (public domain). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

export interface BadRequest {
  /** What was broken, to say which request failed. */
  label: string
  method: string
  path: string
  headers: Record<string, string>
  body?: string | Uint8Array
}

type Json = string | number | boolean | null | Json[] | { [key: string]: Json }
type Body = { [key: string]: Json }

interface RouteTemplate {
  name: string
  method: 'GET' | 'POST' | 'DELETE'
  /** Path of a valid request (random ids are fine: a miss is a 404, still refused). */
  path: () => string
  /** A valid JSON body, for routes that take one. */
  body?: () => Body
  /** Top-level fields that must be present. */
  required?: string[]
  headers?: () => Record<string, string>
  /** Route-specific breakages: each returns a request that must be refused. */
  specific: ((rng: () => number) => Omit<BadRequest, 'method'>)[]
}

/** A random-looking UUID drawn from rng, so ids reproduce with the seed too. */
function seededUuid(rng: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(rng() * 16).toString(16)).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`
}

const pick = <T>(rng: () => number, items: readonly T[]): T =>
  items[Math.floor(rng() * items.length)] as T

/** Strings no database can hold as sent. */
const UNSTORABLE = ['\u0000', '\ud800', '\udfff', 'a\u0000', '\udc00\ud800', 'x\ud83dy']
/** Values of the wrong JSON type for a string, number or object field. */
const WRONG_TYPES: Json[] = [null, 42, -1.5, true, [], ['x'], {}, { a: 1 }, '']

const userMessage = (text: string, id?: string): Json => ({
  ...(id === undefined ? {} : { id }),
  role: 'user',
  content: { content_type: 'text', parts: [text] },
})

/** The routes and how to break each. `user` is the identity of valid requests. */
export function routeTemplates(user: string, rng: () => number): RouteTemplate[] {
  const uuid = () => seededUuid(rng)
  const query = (params: Record<string, string | undefined>) =>
    `?${new URLSearchParams(params as Record<string, string>)}`
  return [
    {
      name: 'send',
      method: 'POST',
      path: () => '/backend-api/f/conversation',
      body: () => ({ user_id: user, messages: [userMessage('hello there')] }),
      required: ['messages'],
      specific: [
        (rng) => ({
          label: 'temperature out of range',
          path: '/backend-api/f/conversation',
          headers: {},
          body: JSON.stringify({
            user_id: user,
            messages: [userMessage('x')],
            metadata: { temperature: pick(rng, [-0.1, 2.01, 1e9, 'hot']) },
          }),
        }),
        (rng) => ({
          label: 'too many or too few messages/parts',
          path: '/backend-api/f/conversation',
          headers: {},
          body: JSON.stringify({
            user_id: user,
            messages: pick(rng, [
              [],
              Array.from({ length: 17 }, () => userMessage('x')),
              [{ role: 'user', content: { content_type: 'text', parts: [] } }],
              [{ role: 'assistant', content: { content_type: 'text', parts: ['x'] } }],
              [{ role: 'user', content: { content_type: 'image', parts: ['x'] } }],
              [userMessage('   ')],
            ]),
          }),
        }),
        (rng) => ({
          label: 'an id or user_id out of bounds',
          path: '/backend-api/f/conversation',
          headers: {},
          body: JSON.stringify(
            pick(rng, [
              { user_id: 'u'.repeat(129), messages: [userMessage('x')] },
              { user_id: user, messages: [userMessage('x', 'i'.repeat(129))] },
              { user_id: user, messages: [userMessage('x', '')] },
              { user_id: user, conversation_id: 'not-a-uuid', messages: [userMessage('x')] },
              { user_id: user, conversation_id: uuid(), messages: [userMessage('x')] },
            ]),
          ),
        }),
        () => ({
          label: 'more than 100,000 characters of text',
          path: '/backend-api/f/conversation',
          headers: {},
          body: JSON.stringify({ user_id: user, messages: [userMessage('t'.repeat(100_001))] }),
        }),
      ],
    },
    {
      name: 'resume',
      method: 'POST',
      path: () => '/backend-api/f/conversation/resume',
      body: () => ({ conversation_id: uuid(), offset: 0 }),
      required: ['conversation_id'],
      headers: () => ({ 'x-conduit-token': 'not.a.token' }),
      specific: [
        (rng) => ({
          label: 'a bad offset',
          path: '/backend-api/f/conversation/resume',
          headers: { 'x-conduit-token': 'x' },
          body: JSON.stringify({ conversation_id: uuid(), offset: pick(rng, [-1, 1.5, '3']) }),
        }),
        () => ({
          label: 'no token',
          path: '/backend-api/f/conversation/resume',
          headers: {},
          body: JSON.stringify({ conversation_id: uuid() }),
        }),
      ],
    },
    {
      name: 'stop',
      method: 'POST',
      path: () => '/backend-api/stop_conversation',
      body: () => ({ conversation_id: uuid(), user_id: user }),
      required: ['conversation_id'],
      specific: [],
    },
    {
      name: 'list',
      method: 'GET',
      path: () => `/backend-api/conversations${query({ user_id: user })}`,
      specific: [
        (rng) => ({
          label: 'a bad paging parameter',
          path: `/backend-api/conversations${query({
            user_id: user,
            ...pick(rng, [
              { limit: '0' },
              { limit: '101' },
              { limit: 'ten' },
              { offset: '-1' },
              { offset: '1e3' },
              { order: 'oldest' },
              { limit: '1\u0000' },
            ]),
          })}`,
          headers: {},
        }),
        () => ({
          label: 'no identity',
          path: '/backend-api/conversations',
          headers: {},
        }),
        (rng) => ({
          // URLSearchParams would send a lone surrogate as U+FFFD: these are written by hand.
          label: 'an unstorable or undecodable user_id in the query',
          path: `/backend-api/conversations?user_id=u${pick(rng, ['%00', '%ED%A0%80', '%FF', '%C0%AF', '%E2%82', '%zz', '%'])}`,
          headers: {},
        }),
      ],
    },
    {
      name: 'detail',
      method: 'GET',
      path: () => `/backend-api/conversation/${uuid()}${query({ user_id: user })}`,
      specific: [
        (rng) => ({
          label: 'a path id that is not a UUID',
          path: `/backend-api/conversation/${pick(rng, ['1', 'x'.repeat(300), '%00', uuid().slice(1), "'%20OR%201=1"])}${query({ user_id: user })}`,
          headers: {},
        }),
        (rng) => ({
          label: 'stream status of a bad or missing conversation',
          path: `/backend-api/conversation/${pick(rng, [uuid(), 'nope'])}/stream_status${query({ user_id: pick(rng, [user, `u\u0000`]) })}`,
          headers: {},
        }),
      ],
    },
    {
      name: 'documents',
      method: 'POST',
      path: () => '/documents',
      body: () => ({ content: `doc ${uuid()}`, metadata: { source: 'fuzz' } }),
      required: ['content'],
      specific: [
        () => ({
          label: 'content over the size limit',
          path: '/documents',
          headers: {},
          body: JSON.stringify({ content: 'd'.repeat(1_048_577) }),
        }),
        (rng) => ({
          label: 'metadata that is not an object',
          path: '/documents',
          headers: {},
          body: JSON.stringify({
            content: `doc ${uuid()}`,
            metadata: pick(rng, ['text', 3, [1], true]),
          }),
        }),
      ],
    },
    {
      name: 'query',
      method: 'POST',
      path: () => '/query',
      body: () => ({ question: 'needle', top_k: 5 }),
      required: ['question'],
      specific: [
        (rng) => ({
          label: 'top_k out of range',
          path: '/query',
          headers: {},
          body: JSON.stringify({ question: 'q', top_k: pick(rng, [0, 101, 2.5, '5', -3]) }),
        }),
      ],
    },
    {
      name: 'flush cache',
      method: 'DELETE',
      path: () => '/cache',
      headers: () => ({ authorization: 'Bearer wrong-admin-token' }),
      specific: [
        (rng) => ({
          label: 'a missing or malformed admin token',
          path: '/cache',
          headers: pick<Record<string, string>>(rng, [
            {},
            { authorization: 'Bearer' },
            { authorization: 'Basic x' },
          ]),
        }),
      ],
    },
  ]
}

/** Every path to a string (value or key) in a JSON value. */
function stringSlots(value: Json, path: (string | number)[] = []): (string | number)[][] {
  if (typeof value === 'string') return [path]
  if (Array.isArray(value))
    return value.flatMap((child, index) => stringSlots(child, [...path, index]))
  if (value !== null && typeof value === 'object')
    return Object.entries(value).flatMap(([key, child]) => stringSlots(child, [...path, key]))
  return []
}

function setAt(root: Body, path: (string | number)[], value: Json): void {
  let node: Json = root
  for (const step of path.slice(0, -1)) node = (node as Record<string | number, Json>)[step] as Json
  ;(node as Record<string | number, Json>)[path.at(-1) as string | number] = value
}

const getAt = (root: Body, path: (string | number)[]): Json =>
  path.reduce<Json>((node, step) => (node as Record<string | number, Json>)[step] as Json, root)

const deepJson = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`

interface BrokenBody {
  label: string
  body: string | Uint8Array
  contentType?: string
}

/** Breakages that apply to any JSON body. */
const GENERIC: ((rng: () => number, body: Body, required: string[]) => BrokenBody | undefined)[] = [
  (rng, body) => {
    const slots = stringSlots(body)
    if (slots.length === 0) return undefined
    const slot = pick(rng, slots)
    const bad = pick(rng, UNSTORABLE)
    const copy = structuredClone(body)
    const value = getAt(copy, slot) as string
    const at = Math.floor(rng() * (value.length + 1))
    setAt(copy, slot, value.slice(0, at) + bad + value.slice(at))
    return { label: `unstorable text at ${slot.join('.')}`, body: JSON.stringify(copy) }
  },
  (rng, body) => {
    const copy = structuredClone(body)
    copy[`extra${pick(rng, UNSTORABLE)}`] = 1
    return { label: 'an unstorable key', body: JSON.stringify(copy) }
  },
  (rng, body, required) => {
    if (required.length === 0) return undefined
    const field = pick(rng, required)
    const copy = structuredClone(body)
    const drop = rng() < 0.3
    if (drop) delete copy[field]
    else
      copy[field] = pick(
        rng,
        WRONG_TYPES.filter((value) => typeof value !== typeof body[field]),
      )
    return { label: `${drop ? 'missing' : 'wrong type for'} ${field}`, body: JSON.stringify(copy) }
  },
  (rng, body) => {
    const text = JSON.stringify(body)
    for (let attempt = 0; attempt < 20; attempt++) {
      const cut = text.slice(0, Math.floor(rng() * text.length))
      const broken = cut + pick(rng, ['', ',', '}', '"', '\\', ']]', 'nul', '{"'])
      try {
        JSON.parse(broken)
      } catch {
        return { label: 'broken JSON', body: broken }
      }
    }
    return { label: 'broken JSON', body: '{' }
  },
  (rng, body) => {
    const text = new TextEncoder().encode(JSON.stringify(body))
    const at = 1 + Math.floor(rng() * (text.length - 2))
    const bytes = pick(rng, [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82]])
    return {
      label: 'bytes that are not UTF-8',
      body: new Uint8Array([...text.slice(0, at), ...bytes, ...text.slice(at)]),
    }
  },
  (rng, body) => {
    const levels = 65 + Math.floor(rng() * 100_000)
    const text = JSON.stringify({ ...body, nested: 0 }).replace(
      '"nested":0',
      `"nested":${deepJson(levels)}`,
    )
    return { label: `JSON nested ${levels} deep`, body: text }
  },
  (rng, body) => ({
    label: 'a JSON body sent as another content type',
    body: JSON.stringify(body),
    contentType: pick(rng, ['text/plain', 'application/x-www-form-urlencoded']),
  }),
  (rng) => ({
    label: 'a body that is not an object',
    body: JSON.stringify(pick(rng, [[], 'text', 7, null, [{}]])),
  }),
]

/** `count` bad requests from `seed`, spread over every route, made one at a time. */
export function* badRequests(seed: number, count: number, user: string): Generator<BadRequest> {
  const rng = seededRandom(seed)
  const routes = routeTemplates(user, rng)
  for (let made = 0; made < count; ) {
    const route = pick(rng, routes)
    const body = route.body?.()
    if (!body || (route.specific.length > 0 && rng() < 0.35)) {
      if (route.specific.length === 0) continue
      const broken = pick(rng, route.specific)(rng)
      made++
      yield {
        ...broken,
        method: route.method,
        label: `${route.name}: ${broken.label}`,
        headers: { 'content-type': 'application/json', ...broken.headers },
      }
      continue
    }
    const broken = pick(rng, GENERIC)(rng, body, route.required ?? [])
    if (!broken) continue
    made++
    yield {
      label: `${route.name}: ${broken.label}`,
      method: route.method,
      path: route.path(),
      headers: {
        ...route.headers?.(),
        'content-type': broken.contentType ?? 'application/json',
      },
      body: broken.body,
    }
  }
}
