// The folder FileStore (the embedded default, CONTRACT §20): one file per key
// under FILES_DIR (default <DATA_DIR>/files), written to a temporary name and
// renamed, so a reader never sees half of one. Its signed URLs are this
// service's own route (FOLDER_URL_PATH) with a token (file-url-tokens.ts):
// receive() and serve() answer them, checking the token and, for an upload,
// the most bytes it allows while the bytes come in.
import { randomBytes } from 'node:crypto'
import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { checkKey, type FileStore } from './file-store.ts'
import type { FileUrlTokens } from './file-url-tokens.ts'
import { readLimitedBytes } from './limited-bytes.ts'

/** The route the folder's URLs name, with the token as `sig`. */
export const FOLDER_URL_PATH = '/files/blob'

export interface FolderFileStore extends FileStore {
  readonly kind: 'folder'
  /** Answers a PUT to one of this store's upload URLs: stores the body under the token's key. */
  receive(token: string, body: ReadableStream<Uint8Array> | null): Promise<void>
  /** Answers a GET of one of this store's download URLs: the bytes, with the token's type. */
  serve(token: string): Promise<Response>
}

const isMissing = (error: unknown) =>
  typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'ENOENT'

export function createFolderFileStore({
  dir,
  tokens,
}: {
  dir: string
  tokens: FileUrlTokens
}): FolderFileStore {
  const pathOf = (key: string) => join(dir, checkKey(key))

  const store: FolderFileStore = {
    kind: 'folder',
    async write(key, bytes) {
      const path = pathOf(key)
      await mkdir(dirname(path), { recursive: true })
      const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`
      try {
        await writeFile(temporary, bytes)
        await rename(temporary, path)
      } catch (error) {
        await rm(temporary, { force: true })
        throw error
      }
    },
    async read(key) {
      const file = Bun.file(pathOf(key))
      try {
        return await file.bytes()
      } catch (error) {
        if (isMissing(error)) return undefined
        throw error
      }
    },
    async size(key) {
      try {
        return (await stat(pathOf(key))).size
      } catch (error) {
        if (isMissing(error)) return undefined
        throw error
      }
    },
    async delete(key) {
      await rm(pathOf(key), { force: true })
    },
    async presign(key, { method, expiresInSeconds, type, maxBytes, origin }) {
      const token = tokens.sign({ key: checkKey(key), method, maxBytes, type }, expiresInSeconds)
      return `${origin}${FOLDER_URL_PATH}?sig=${token}`
    },
    async receive(token, body) {
      const { key, maxBytes } = await tokens.verify(token, 'PUT')
      const bytes = await readLimitedBytes(
        body,
        maxBytes ?? 0,
        `The upload is larger than the ${maxBytes ?? 0} bytes this URL takes.`,
      )
      await store.write(key, bytes, '')
    },
    async serve(token) {
      const { key, type } = await tokens.verify(token, 'GET')
      const bytes = await store.read(key)
      if (bytes === undefined) return Response.json(GONE, { status: 404 })
      return new Response(bytes, { headers: servedHeaders(type) })
    },
  }
  return store
}

const GONE = { detail: 'The file no longer exists.', code: 'not_found' }

/**
 * Images are shown inline; anything else is a download, and never sniffed
 * into something a browser would run.
 */
function servedHeaders(type: string | undefined): Record<string, string> {
  const contentType = type ?? 'application/octet-stream'
  return {
    'content-type': contentType,
    'x-content-type-options': 'nosniff',
    'content-disposition': contentType.startsWith('image/') ? 'inline' : 'attachment',
    'cache-control': 'private, max-age=300',
  }
}
