// Helpers for the export and import tests (CONTRACT §17): the two routes over
// app.handle, the detail of a conversation, and a chatgpt.com-shaped export.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { MappingMessage } from '../../src/conversation/tree/mapping-message.ts'
import { get, type TestApp } from './conversation-app.ts'

export const EXPORT = '/backend-api/conversations/export'
export const IMPORT = '/backend-api/conversations/import'

/** A chatgpt.com conversations.json: branches, hidden system and tool nodes, an image part. */
export const CHATGPT_EXPORT = readFileSync(
  join(import.meta.dir, '..', 'fixtures', 'chatgpt-conversations.json'),
)
/** The ids of its conversations, in the file's order. */
export const CHATGPT_IDS = {
  lisbon: '6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f',
  eggs: '9e8d7c6b-5a49-4838-9271-605f4e3d2c1b',
  empty: '0b1c2d3e-4f50-4617-8283-94a5b6c7d8e9',
}

/** The detail's keys, in the order it sends them (CONTRACT §17). */
export const DETAIL_KEYS = [
  'id',
  'conversation_id',
  'title',
  'create_time',
  'update_time',
  'current_node',
  'default_model_slug',
  'is_archived',
  'moderation_results',
  'messages',
  'mapping',
]

export interface Detail {
  id: string
  conversation_id: string
  title: string
  create_time: number
  update_time: number
  current_node: string
  default_model_slug: string
  is_archived: boolean
  moderation_results: unknown[]
  messages: { id: string; role: string; parent_id: string | null; content: { parts?: string[] } }[]
  mapping: Record<
    string,
    { id: string; parent: string | null; children: string[]; message: MappingMessage | null }
  >
}

export interface ImportReport {
  imported: number
  skipped: { id: string | null; index: number; message_id?: string; reason: string }[]
}

/** POST /conversations/import with `body` as the file. */
export function importFile(
  app: TestApp['app'],
  user: string,
  body: RequestInit['body'],
  headers: Record<string, string> = {},
) {
  return app.handle(
    new Request(`http://localhost${IMPORT}`, {
      method: 'POST',
      headers: { 'x-user-id': user, 'content-type': 'application/json', ...headers },
      body,
    }),
  )
}

/** Imports `body` and answers the report; fails the test on any other status. */
export async function imported(app: TestApp['app'], user: string, body: RequestInit['body']) {
  const response = await importFile(app, user, body)
  const text = await response.text()
  if (response.status !== 200) throw new Error(`import answered ${response.status}: ${text}`)
  return JSON.parse(text) as ImportReport
}

/** The user's export, parsed. */
export async function exported(app: TestApp['app'], user: string, query = '') {
  const response = await get(app, `${EXPORT}${query}`, { 'x-user-id': user })
  if (response.status !== 200) throw new Error(`export answered ${response.status}`)
  return (await response.json()) as Detail[]
}

export async function detailOf(app: TestApp['app'], user: string, cid: string) {
  const response = await get(app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
  if (response.status !== 200) throw new Error(`detail answered ${response.status}`)
  return (await response.json()) as Detail
}

/** The user's conversation ids in the list (either archive state), newest update first. */
export async function listedIds(app: TestApp['app'], user: string, archived = false) {
  const response = await get(app, `/backend-api/conversations?limit=100&is_archived=${archived}`, {
    'x-user-id': user,
  })
  return ((await response.json()) as { items: { id: string }[] }).items.map((item) => item.id)
}

/** `detail` as it would read under the conversation id `id`. */
export const withId = (detail: Detail, id: string): Detail => ({
  ...detail,
  id,
  conversation_id: id,
})

/** One node of a conversation built by chatgptConversation: a message, or fields to override. */
export interface NodeSpec {
  id: string
  /** Default: the node before it (the root for the first). */
  parent?: string | null
  role?: string
  text?: string
  /** Fields of the message replaced or added as given. */
  message?: Record<string, unknown>
}

/** A conversation in chatgpt.com's export shape, under a root node `root` without a message. */
export function chatgptConversation(
  id: string,
  nodes: NodeSpec[],
  fields: Record<string, unknown> = {},
): Record<string, unknown> {
  const mapping: Record<string, Record<string, unknown>> = {
    root: { id: 'root', message: null, parent: null, children: [] },
  }
  let previous = 'root'
  nodes.forEach((node, index) => {
    const parent = node.parent === undefined ? previous : node.parent
    mapping[node.id] = {
      id: node.id,
      parent,
      children: [],
      message: {
        id: node.id,
        author: {
          role: node.role ?? (index % 2 === 0 ? 'user' : 'assistant'),
          name: null,
          metadata: {},
        },
        create_time: 1_700_000_000 + index,
        update_time: null,
        content: { content_type: 'text', parts: [node.text ?? `message ${node.id}`] },
        status: 'finished_successfully',
        end_turn: null,
        weight: 1,
        metadata: {},
        recipient: 'all',
        channel: null,
        ...node.message,
      },
    }
    if (parent !== null) (mapping[parent]?.children as string[] | undefined)?.push(node.id)
    previous = node.id
  })
  return {
    id,
    conversation_id: id,
    title: `conversation ${id}`,
    create_time: 1_700_000_000,
    update_time: 1_700_000_100,
    mapping,
    current_node: previous,
    ...fields,
  }
}
