// The S3 FileStore (CONTRACT §20): any S3-compatible object store, for several
// instances that share files, through Bun's built-in S3 client. Its signed
// URLs are the store's presigned URLs (SigV4 query signatures): a client puts
// and gets the bytes there without passing through this service, so an
// upload's size is checked after it, when the client says it is done.
import { S3Client } from 'bun'
import { checkKey, type FileStore } from './file-store.ts'

export interface S3Settings {
  bucket: string
  /** The store's URL, e.g. https://s3.eu-west-1.amazonaws.com or http://minio:9000. */
  endpoint?: string
  region?: string
  accessKeyId?: string
  secretAccessKey?: string
}

/** Whether an S3 error means the key holds nothing. */
const isMissing = (error: unknown) =>
  typeof error === 'object' &&
  error !== null &&
  ['NoSuchKey', 'NotFound', 'ERR_S3_FILE_NOT_FOUND'].includes(
    String((error as { code?: unknown }).code),
  )

export function createS3FileStore(settings: S3Settings): FileStore {
  const client = new S3Client({
    bucket: settings.bucket,
    endpoint: settings.endpoint,
    region: settings.region,
    accessKeyId: settings.accessKeyId,
    secretAccessKey: settings.secretAccessKey,
  })
  return {
    kind: 's3',
    async write(key, bytes, type) {
      await client.write(checkKey(key), bytes, { type: type || 'application/octet-stream' })
    },
    async read(key) {
      try {
        return await client.file(checkKey(key)).bytes()
      } catch (error) {
        if (isMissing(error)) return undefined
        throw error
      }
    },
    async size(key) {
      try {
        return (await client.stat(checkKey(key))).size
      } catch (error) {
        if (isMissing(error)) return undefined
        throw error
      }
    },
    async delete(key) {
      try {
        await client.delete(checkKey(key))
      } catch (error) {
        if (!isMissing(error)) throw error
      }
    },
    async presign(key, { method, expiresInSeconds, type }) {
      return client.presign(checkKey(key), {
        method,
        expiresIn: expiresInSeconds,
        // GET: the store answers with this content type (response-content-type).
        ...(method === 'GET' && type ? { type } : {}),
      })
    },
  }
}
