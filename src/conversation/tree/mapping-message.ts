// One message of a conversation's `mapping` in chatgpt.com's shape (CONTRACT
// §9, §17): the fields of a streamed assistant message, for every message.
// This service's own messages derive what chatgpt.com says of each (author
// name and metadata, recipient, channel, weight, end_turn); an imported one
// shows what its export said.
import type { MessageContent } from '../messages.ts'
import type { TreeRow } from '../sql/tree-repository.ts'

export interface MappingMessage {
  id: string
  author: { role: string; name: string | null; metadata: Record<string, unknown> }
  create_time: number
  update_time: number
  content: MessageContent
  status: string
  end_turn: boolean | null
  weight: number
  metadata: Record<string, unknown>
  recipient: string
  channel: string | null
}

/**
 * Stored metadata clients see: what this service records of a reply, and what
 * an import keeps of chatgpt.com's (PUBLIC_METADATA is also the list an
 * import keeps). The rest (internal flags, a send's temperature) stays private.
 */
export const PUBLIC_METADATA = [
  'model_slug',
  'parent_id',
  'message_type',
  'finish_details',
  'is_complete',
  'is_visually_hidden_from_conversation',
  'is_user_system_message',
  'user_context_message_data',
  // A user message's files, as chatgpt.com lists them (CONTRACT §20).
  'attachments',
  // A tool's answer that is an error (CONTRACT §21).
  'is_error',
] as const

export function publicMetadata(metadata: Record<string, unknown>): Record<string, unknown> {
  const shown: Record<string, unknown> = {}
  for (const key of PUBLIC_METADATA) if (metadata[key] !== undefined) shown[key] = metadata[key]
  return shown
}

/** How one of this service's own messages ended its turn: null while it streams, and for users. */
function endTurnOf(row: TreeRow): boolean | null {
  if (row.role !== 'assistant' || row.status === 'in_progress') return null
  return row.status !== 'finished_partial_completion'
}

const seconds = (date: Date) => date.getTime() / 1000

export function mappingMessage(row: TreeRow): MappingMessage {
  const wire = row.wire
  return {
    id: row.id,
    author: {
      role: row.role,
      name: wire ? wire.author_name : null,
      metadata: wire ? wire.author_metadata : {},
    },
    create_time: seconds(row.createdAt),
    update_time: seconds(row.updatedAt),
    content: row.content,
    status: row.status,
    end_turn: wire ? wire.end_turn : endTurnOf(row),
    // JSON has one number type: chatgpt.com's 1.0 is sent as 1.
    weight: wire ? wire.weight : 1,
    metadata: publicMetadata(row.metadata),
    recipient: wire ? wire.recipient : 'all',
    channel: wire ? wire.channel : null,
  }
}
