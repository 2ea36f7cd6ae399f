// The FileStore port (CONTRACT §20): where an attachment's bytes live, by key.
// Two adapters pass one contract suite (test/files/file-store-contract.test.ts):
// a folder under the data dir (folder-file-store.ts, the embedded default) and
// any S3-compatible object store (s3-file-store.ts). Both hand out signed,
// expiring URLs for one key, so a client moves the bytes itself: the store's
// presigned URLs for S3, this service's own signed routes for the folder.

/** What a signed URL lets its holder do with one key. */
export interface PresignOptions {
  /** `PUT` uploads the bytes, `GET` downloads them. */
  method: 'PUT' | 'GET'
  expiresInSeconds: number
  /** GET: the content type the bytes are served with. */
  type?: string
  /**
   * PUT: the most bytes the URL takes. Enforced while receiving by a store
   * that receives them through this service (the folder); a store that
   * receives them itself (S3) cannot, so the caller checks the size after.
   */
  maxBytes?: number
  /** This service's origin as the client reached it: the folder's URLs are its own routes. */
  origin: string
}

export interface FileStore {
  /** `folder` or `s3`. */
  readonly kind: 'folder' | 's3'
  /** Stores bytes under key, replacing what was there; readers never see half of them. */
  write(key: string, bytes: Uint8Array, type: string): Promise<void>
  /** The bytes under key, or undefined when there are none. */
  read(key: string): Promise<Uint8Array | undefined>
  /** The size of the bytes under key, or undefined when there are none. */
  size(key: string): Promise<number | undefined>
  /** Removes the bytes under key; nothing there is not an error. */
  delete(key: string): Promise<void>
  /** An absolute URL that lets its holder PUT or GET the bytes of key until it expires. */
  presign(key: string, options: PresignOptions): Promise<string>
}

/**
 * Keys are made by the service (never from a file name): segments of letters,
 * digits, `.`, `_` and `-`, not starting with a dot, joined by `/`.
 */
const KEY = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}(\/[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}){0,3}$/

/** Throws unless key is one this service makes: a store never sees `..` or an absolute path. */
export function checkKey(key: string): string {
  if (!KEY.test(key)) throw new Error(`not a file store key: ${JSON.stringify(key)}`)
  return key
}
