// The attachments of CONTRACT §20, as chatgpt.com's clients use them: create a
// pending file and hand out a signed upload URL; once the client says it
// uploaded, check the bytes (size, quota, type), read their contents and keep
// them under a key no upload URL names, so what was checked is what is served;
// hand out signed download URLs; delete bytes and text together. Every call
// names the owner: another user's file is not found.
import { randomBytes } from 'node:crypto'
import { conflict, DomainError, notFound } from '../errors.ts'
import type { Db } from '../storage/db.ts'
import { type FileContents, readContents } from './file-contents.ts'
import { createFileRepository, type ReadyFile } from './file-repository.ts'
import type { FileStore } from './file-store.ts'
import { servedType } from './file-types.ts'
import type { FolderFileStore } from './folder-file-store.ts'
import type { ResolvedFile } from './model-content.ts'

export interface FileServiceOptions {
  db: Db
  /** Where the bytes live; the folder store also answers its own signed URLs. */
  store: FileStore | FolderFileStore
  /** FILE_MAX_BYTES: the largest file. */
  maxBytes: number
  /** FILES_MAX_BYTES_PER_USER: what one user's files may take together. */
  maxBytesPerUser: number
  /** Longest a PDF's text extraction may take. */
  pdfTimeoutMs?: number
  /** How long an upload URL may be used. */
  uploadUrlSeconds?: number
  /** How long a download URL may be used. */
  downloadUrlSeconds?: number
}

export interface CreateFile {
  fileName: string
  fileSize: number
  useCase: string
}

const FILE_ID = /^file-[0-9a-f]{32}$/

/** Where the client's upload lands, and where checked bytes are kept. */
const uploadKey = (id: string) => `uploads/${id}`
const fileKey = (id: string) => `files/${id}`

const missing = () => notFound('File not found.')

const tooLargeAs = (code: string, detail: string) => new DomainError('too_large', detail, { code })

export function createFileService(options: FileServiceOptions) {
  const { store, maxBytes, maxBytesPerUser } = options
  const pdfTimeoutMs = options.pdfTimeoutMs ?? 10_000
  const uploadUrlSeconds = options.uploadUrlSeconds ?? 900
  const downloadUrlSeconds = options.downloadUrlSeconds ?? 3_600
  const files = createFileRepository(options.db)

  const overFileLimit = () =>
    tooLargeAs('file_too_large', `The file is larger than ${maxBytes} bytes (FILE_MAX_BYTES).`)
  const overQuota = () =>
    tooLargeAs(
      'file_quota_exceeded',
      `This file would take your files past their quota of ${maxBytesPerUser} bytes (FILES_MAX_BYTES_PER_USER); delete some first.`,
    )

  /** A file id from a path; anything that is not one this service makes is simply not found. */
  const idOf = (raw: string) => {
    if (!FILE_ID.test(raw)) throw missing()
    return raw
  }

  const downloadUrl = (id: string, mime: string, origin: string) =>
    store.presign(fileKey(id), {
      method: 'GET',
      expiresInSeconds: downloadUrlSeconds,
      type: servedType(mime),
      origin,
    })

  /** Forgets a refused upload: its row and any bytes. */
  const discard = async (userId: string, id: string) => {
    await Promise.all([store.delete(uploadKey(id)), store.delete(fileKey(id))])
    await files.remove(userId, id)
  }

  return {
    kind: store.kind,

    /** POST /files: a pending file and the URL to PUT its bytes to. */
    async create(userId: string, file: CreateFile, origin: string) {
      if (file.fileSize > maxBytes) throw overFileLimit()
      if (file.fileSize > maxBytesPerUser) throw overQuota()
      const id = `file-${randomBytes(16).toString('hex')}`
      const result = await files.insertWithinQuota(
        {
          id,
          userId,
          name: file.fileName,
          useCase: file.useCase,
          declaredSize: file.fileSize,
        },
        maxBytesPerUser,
        uploadUrlSeconds,
      )
      if (!result.inserted) throw overQuota()
      const uploadUrl = await store.presign(uploadKey(id), {
        method: 'PUT',
        expiresInSeconds: uploadUrlSeconds,
        maxBytes: file.fileSize,
        origin,
      })
      return { status: 'success' as const, file_id: id, upload_url: uploadUrl }
    },

    /**
     * POST /files/{id}/uploaded: checks and reads the uploaded bytes. A file
     * refused here (too large, over quota, a type it cannot use, unreadable)
     * is deleted; one whose bytes have not come yet stays pending (409).
     */
    async uploaded(userId: string, rawId: string, origin: string) {
      const id = idOf(rawId)
      const row = await files.find(userId, id)
      if (!row) throw missing()
      if (row.status === 'ready' && row.mimeType)
        return {
          status: 'success' as const,
          download_url: await downloadUrl(id, row.mimeType, origin),
        }
      const bytes = await store.read(uploadKey(id))
      if (bytes === undefined)
        throw conflict('The file has not been uploaded yet: PUT its bytes to the upload URL first.')
      let contents: FileContents
      try {
        // An S3 upload URL cannot hold the client to its size: checked here.
        if (bytes.byteLength > maxBytes) throw overFileLimit()
        if (bytes.byteLength > row.declaredSize)
          throw tooLargeAs(
            'file_size_mismatch',
            `The upload is ${bytes.byteLength} bytes, more than the ${row.declaredSize} declared.`,
          )
        contents = await readContents(bytes, row.name, {
          pdfTimeoutMs,
          maxTextChars: maxBytes,
        })
        await store.write(fileKey(id), bytes, contents.mime)
        const ready = await files.markReady(
          userId,
          id,
          {
            sizeBytes: bytes.byteLength,
            mimeType: contents.mime,
            width: contents.width,
            height: contents.height,
            text: contents.text,
          },
          maxBytesPerUser,
          uploadUrlSeconds,
        )
        if (!ready) throw overQuota()
      } catch (error) {
        await discard(userId, id)
        throw error
      }
      await store.delete(uploadKey(id))
      return {
        status: 'success' as const,
        download_url: await downloadUrl(id, contents.mime, origin),
      }
    },

    /** GET /files/{id}/download: a download URL and what the file is. */
    async download(userId: string, rawId: string, origin: string) {
      const id = idOf(rawId)
      const row = await files.find(userId, id)
      if (!row) throw missing()
      if (row.status !== 'ready' || !row.mimeType || row.sizeBytes === null)
        throw conflict('The file has not been uploaded yet.')
      return {
        status: 'success' as const,
        download_url: await downloadUrl(id, row.mimeType, origin),
        file_name: row.name,
        mime_type: row.mimeType,
        size_bytes: row.sizeBytes,
        ...(row.width === null ? {} : { width: row.width, height: row.height }),
      }
    },

    /** DELETE /files/{id}: the bytes, the row and its extracted text. */
    async remove(userId: string, rawId: string) {
      const id = idOf(rawId)
      if (!(await files.find(userId, id))) throw missing()
      await discard(userId, id)
      return { success: true as const }
    },

    /** A PUT to one of the folder store's upload URLs (S3's go to S3: not found here). */
    async receive(token: string, body: ReadableStream<Uint8Array> | null) {
      if (!('receive' in store)) throw notFound('Not found.')
      await store.receive(token, body)
    },

    /** A GET of one of the folder store's download URLs. */
    async serve(token: string) {
      if (!('serve' in store)) throw notFound('Not found.')
      return store.serve(token)
    },

    /** The user's ready files among ids; missing ones (and other users') are left out. */
    readyFiles: (userId: string, ids: readonly string[]): Promise<ReadyFile[]> =>
      files.readyFiles(
        userId,
        ids.filter((id) => FILE_ID.test(id)),
      ),

    /**
     * The files a message names (multimodal-message.ts fileIds), in that
     * order, images with their bytes, for model-content.ts: `not_found` (404)
     * when one is not a ready file of the user's, as for a conversation. With
     * skipMissing (a stored message whose file was deleted since), such a
     * file is left out instead.
     */
    async resolveAttachments(
      userId: string,
      ids: readonly string[],
      options: { skipMissing?: boolean } = {},
    ): Promise<ResolvedFile[]> {
      const found = new Map(
        (
          await files.readyFiles(
            userId,
            ids.filter((id) => FILE_ID.test(id)),
          )
        ).map((row) => [row.id, row]),
      )
      const resolved = await Promise.all(
        ids.map(async (id): Promise<ResolvedFile | undefined> => {
          const row = found.get(id)
          const image = row?.mimeType.startsWith('image/') ?? false
          const bytes = row && image ? await store.read(fileKey(id)) : undefined
          if (!row || (image && bytes === undefined)) {
            if (options.skipMissing) return undefined
            throw notFound(`File not found: ${id}.`)
          }
          return {
            id,
            name: row.name,
            mimeType: row.mimeType,
            text: row.text,
            ...(bytes ? { bytes } : {}),
          }
        }),
      )
      return resolved.filter((file) => file !== undefined)
    },
  }
}

export type FileService = ReturnType<typeof createFileService>
