// A user's history out and in (CONTRACT §17), mounted by routes.ts under
// /backend-api: GET /conversations/export streams the user's conversations as
// chatgpt.com's conversations.json, and POST /conversations/import stores
// such a file (or a data export zip holding one), read as it arrives - the
// body limit (body-limit.ts) leaves this route's body to it, bounded by
// IMPORT_MAX_BYTES instead. The caller is named as for reads (X-User-Id, else
// the user_id query parameter; the bearer token with JWT auth).
import { Elysia, type TSchema, t } from 'elysia'
import { invalid } from '../../errors.ts'
import type { Authenticator } from '../../http/auth.ts'
import { bearerAuth, claimedReader, IdentityHeaders } from '../route-helpers.ts'
import { errorResponseDocs, errorResponses, open } from '../schemas.ts'
import { ConversationDetail } from '../tree/detail-schema.ts'
import type { ImportReport } from './import/import-conversations.ts'
import { bodyBytes, conversationsJsonBytes } from './import/import-file.ts'

export interface Transfer {
  /** The user's conversations as the bytes of conversations.json; `archived` undefined: all. */
  export(userId: string, archived: boolean | undefined): ReadableStream<Uint8Array>
  /** Stores the conversations of a conversations.json arriving as bytes. */
  import(userId: string, file: AsyncIterable<Uint8Array>): Promise<ImportReport>
}

export interface TransferRoutesDeps {
  transfer: Transfer
  auth: Authenticator
  /** Largest import accepted, as sent and (for a zip) as conversations.json unpacked. */
  importMaxBytes: number
}

const userIdQuery = t.Optional(
  t.String({ description: 'Development mode: the caller, if no X-User-Id.' }),
)

const ExportQuery = t.Object(
  {
    archived: t.Optional(
      t.String({
        description: '`true`: only archived conversations; `false`: only the others. Absent: all.',
      }),
    ),
    user_id: userIdQuery,
  },
  open,
)

const ImportQuery = t.Object({ user_id: userIdQuery }, open)

const ImportResult = t.Object({
  imported: t.Integer({ minimum: 0, description: 'Conversations stored.' }),
  skipped: t.Array(
    t.Object({
      id: t.Union([t.String(), t.Null()], {
        description:
          'The conversation’s id in the file (`id`, else `conversation_id`); null when it has none that can be read.',
      }),
      index: t.Integer({
        minimum: 0,
        description: 'The conversation’s position in the file’s array, from 0.',
      }),
      message_id: t.Optional(
        t.String({ description: 'Set when only part of a stored conversation was left out.' }),
      ),
      reason: t.String(),
    }),
    {
      description:
        'What was not stored, and why: conversations imported before, unreadable (the reason names the first bad field) or unrepresentable, and parts of imported ones (attachments).',
    },
  ),
})

function archivedOf(raw: string | undefined): boolean | undefined {
  if (raw === undefined) return undefined
  if (raw === 'true' || raw === 'false') return raw === 'true'
  throw invalid('The query parameter "archived" must be "true" or "false".')
}

/**
 * A browser form's upload (multipart/form-data) is refused with the way to
 * send the file instead: reading one would hold the whole form (Bun's
 * formData() buffers it), past the memory an import may take (CONTRACT §19).
 */
function refuseFormUpload(request: Request): void {
  const type = request.headers.get('content-type')?.toLowerCase() ?? ''
  if (type.startsWith('multipart/'))
    throw invalid(
      'A form upload (multipart/form-data) is not accepted: send the file itself as the request body, with Content-Type: application/json for conversations.json or application/zip for the data export zip (curl --data-binary @conversations.json).',
      'unsupported_media_type',
    )
}

const tags = ['conversation']

/** OpenAPI media type objects of these schemas (for bodies no route schema validates). */
const mediaTypes = (schemas: Record<string, TSchema>) =>
  Object.fromEntries(Object.entries(schemas).map(([type, schema]) => [type, { schema }]))

/** An OpenAPI response object, as errorResponseDocs builds them. */
const documented = (status: number, description: string, schemas: Record<string, TSchema>) =>
  Object.fromEntries([[status, { description, content: mediaTypes(schemas) }]])

export function transferRoutes({ transfer, auth, importMaxBytes }: TransferRoutesDeps) {
  return new Elysia({ name: 'conversation-transfer' })
    .get(
      '/conversations/export',
      async ({ query, request }) => {
        const archived = archivedOf(query.archived)
        const userId = await auth.userOf(request, claimedReader(request, query.user_id))
        return new Response(transfer.export(userId, archived), {
          headers: {
            'content-type': 'application/json; charset=utf-8',
            'content-disposition': 'attachment; filename="conversations.json"',
            'cache-control': 'no-store',
          },
        })
      },
      {
        query: ExportQuery,
        headers: IdentityHeaders,
        detail: {
          ...bearerAuth,
          tags,
          summary: "Download the user's conversations as chatgpt.com's conversations.json",
          description:
            'A JSON array of conversation details (as GET /conversation/{id} answers), oldest first, streamed as it is read: a download that breaks off is not valid JSON.',
          responses: {
            ...documented(200, 'conversations.json, as an attachment.', {
              'application/json': t.Array(ConversationDetail),
            }),
            ...errorResponseDocs(401, 403, 422),
          },
        },
      },
    )
    .post(
      '/conversations/import',
      async ({ query, request }) => {
        const userId = await auth.userOf(request, claimedReader(request, query.user_id))
        refuseFormUpload(request)
        const bytes = conversationsJsonBytes(bodyBytes(request, importMaxBytes), importMaxBytes)
        return transfer.import(userId, bytes)
      },
      {
        query: ImportQuery,
        headers: IdentityHeaders,
        response: { 200: ImportResult, ...errorResponses(401, 403, 413, 422) },
        detail: {
          ...bearerAuth,
          tags,
          summary:
            "Import chatgpt.com's conversations.json (or its data export zip) as the user's conversations",
          description:
            'The file is the request body itself (not a form upload). Each conversation is stored whole (branches, current node, times, title, model slugs) or not at all; importing the same file again stores nothing new. A conversation that cannot be read is skipped, listed with the reason naming its first bad field; a file that is not an array of conversations (or a zip holding one) is a 422.',
          requestBody: {
            required: true,
            content: mediaTypes({
              'application/json': t.Array(
                t.Object({}, { ...open, description: 'A conversation (chatgpt.com’s shape).' }),
                {
                  description:
                    'conversations.json: an array of conversations, as the export gives.',
                },
              ),
              'application/zip': t.String({
                format: 'binary',
                description: 'A data export zip holding conversations.json.',
              }),
            }),
          },
        },
      },
    )
}
