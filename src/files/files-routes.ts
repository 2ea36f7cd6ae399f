// The attachment routes of CONTRACT §20 under /backend-api, as chatgpt.com's
// clients call them (gpt4free's upload_files): create, the signed PUT and GET
// of the folder store, uploaded, download, delete. The caller is named as for
// a send (body user_id, else X-User-Id, else ?user_id; the token with JWT
// auth); the signed URLs carry their own authority and name no user.
import { Elysia, t } from 'elysia'
import type { Authenticator } from '../http/auth.ts'
import { ErrorBody } from '../http/error-schema.ts'
import type { FileService } from './file-service.ts'
import { FOLDER_URL_PATH } from './folder-file-store.ts'

export interface FilesRoutesDeps {
  files: FileService
  auth: Authenticator
}

const open = { additionalProperties: true }
const tags = ['files']
const security = { security: [{ bearerAuth: [] }, {}] as Record<string, string[]>[] }
const errors = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((status) => [status, ErrorBody]))

const userIdField = t.Optional(
  t.String({ minLength: 1, maxLength: 128, description: 'Development mode: the caller.' }),
)

const CreateBody = t.Object(
  {
    file_name: t.String({
      minLength: 1,
      maxLength: 255,
      description: 'Shown as the file’s name; never used as a path.',
    }),
    file_size: t.Integer({
      minimum: 1,
      description: 'Bytes the client will upload; a larger upload is refused.',
    }),
    use_case: t.Optional(
      t.String({ maxLength: 64, description: '`multimodal` (images), `my_files`, …' }),
    ),
    user_id: userIdField,
  },
  { ...open, description: 'What chatgpt.com clients send; other fields are ignored.' },
)

const IdentityHeaders = t.Object(
  {
    'x-user-id': t.Optional(
      t.String({ description: 'Development mode (no AUTH_JWT_SECRET): who the caller is.' }),
    ),
  },
  open,
)

const AnyBody = t.Optional(t.Object({ user_id: userIdField }, open))
const FileParams = t.Object({ file_id: t.String() })
const Query = t.Object({ user_id: t.Optional(t.String()) }, open)
const SignedQuery = t.Object({ sig: t.Optional(t.String()) }, open)

const Created = t.Object({
  status: t.Literal('success'),
  file_id: t.String(),
  upload_url: t.String({ description: 'Absolute, signed, expiring: PUT the bytes here.' }),
})
const Uploaded = t.Object({ status: t.Literal('success'), download_url: t.String() })
const Download = t.Object(
  {
    status: t.Literal('success'),
    download_url: t.String({ description: 'Absolute, signed, expiring: GET the bytes here.' }),
    file_name: t.String(),
    mime_type: t.String({ description: 'Read from the bytes, not the name.' }),
    size_bytes: t.Integer(),
  },
  open,
)

const originOf = (request: Request) => new URL(request.url).origin

export function filesRoutes({ files, auth }: FilesRoutesDeps) {
  const userOf = (request: Request, body: unknown, query: { user_id?: string }) => {
    const fromBody =
      typeof body === 'object' && body !== null
        ? (body as { user_id?: unknown }).user_id
        : undefined
    const claimed =
      (typeof fromBody === 'string' ? fromBody : undefined) ??
      request.headers.get('x-user-id') ??
      query.user_id
    return auth.userOf(request, claimed)
  }

  // The folder store's signed URLs: outside /backend-api, as they carry their
  // own authority and name no user (S3's are on the store).
  const signed = new Elysia({ name: 'files-signed-urls' })
    .put(
      FOLDER_URL_PATH,
      async ({ request, query }) => {
        await files.receive(query.sig ?? '', request.body)
        return new Response(null, { status: 201 })
      },
      {
        query: SignedQuery,
        detail: {
          tags,
          summary: 'The folder store’s signed upload URL: PUT the bytes (any content type)',
        },
      },
    )
    .get(FOLDER_URL_PATH, ({ query }) => files.serve(query.sig ?? ''), {
      query: SignedQuery,
      detail: {
        tags,
        summary: 'The folder store’s signed download URL: the bytes, with their type',
      },
    })

  const api = new Elysia({ name: 'files-api', prefix: '/backend-api' })
    .post(
      '/files',
      async ({ body, request, query }) =>
        files.create(
          await userOf(request, body, query),
          {
            fileName: body.file_name,
            fileSize: body.file_size,
            useCase: body.use_case ?? 'my_files',
          },
          originOf(request),
        ),
      {
        body: CreateBody,
        headers: IdentityHeaders,
        query: Query,
        response: { 200: Created, ...errors(401, 403, 413, 422) },
        detail: { ...security, tags, summary: 'Create a file and get its upload URL' },
      },
    )
    .post(
      '/files/:file_id/uploaded',
      async ({ body, request, query, params }) =>
        files.uploaded(await userOf(request, body, query), params.file_id, originOf(request)),
      {
        body: AnyBody,
        params: FileParams,
        headers: IdentityHeaders,
        query: Query,
        response: { 200: Uploaded, ...errors(401, 403, 404, 409, 413, 415, 422) },
        detail: {
          ...security,
          tags,
          summary: 'Say the bytes are uploaded: checked, read, and the download URL',
        },
      },
    )
    .get(
      '/files/:file_id/download',
      async ({ request, query, params }) =>
        files.download(await userOf(request, undefined, query), params.file_id, originOf(request)),
      {
        params: FileParams,
        headers: IdentityHeaders,
        query: Query,
        response: { 200: Download, ...errors(401, 403, 404, 409) },
        detail: { ...security, tags, summary: 'A download URL and what the file is' },
      },
    )
    .delete(
      '/files/:file_id',
      async ({ request, query, params }) =>
        files.remove(await userOf(request, undefined, query), params.file_id),
      {
        params: FileParams,
        headers: IdentityHeaders,
        query: Query,
        response: { 200: t.Object({ success: t.Literal(true) }), ...errors(401, 403, 404) },
        detail: { ...security, tags, summary: 'Delete the file: its bytes and its extracted text' },
      },
    )

  return new Elysia({ name: 'files' }).use(signed).use(api)
}
