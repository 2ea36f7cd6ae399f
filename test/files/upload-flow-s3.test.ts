// The upload flow of CONTRACT §20 with the S3 store: the app configured by
// S3_* against a real S3-compatible server process (s3rver on loopback). The
// URLs handed out are the store's presigned ones, so the bytes go to the store
// directly; what the store cannot check at the PUT (the size) is checked at
// `uploaded`, where a file larger than declared is a 413 and is deleted.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { S3Client } from 'bun'
import { appBackends } from '../support/backends.ts'
import { conversationApp, get, newUser, post, type TestApp } from '../support/conversation-app.ts'
import { type S3Server, startS3Server } from '../support/s3-server.ts'
import { png } from '../support/sample-files.ts'

const backend = appBackends()[0]

describe('upload flow on an S3 store', () => {
  let s3: S3Server
  let t: TestApp
  let bucket: S3Client

  beforeAll(async () => {
    if (!backend) throw new Error('no app backend')
    s3 = await startS3Server()
    t = await conversationApp({
      backend,
      env: {
        S3_BUCKET: s3.bucket,
        S3_ENDPOINT: s3.endpoint,
        S3_REGION: 'us-east-1',
        S3_ACCESS_KEY_ID: s3.accessKeyId,
        S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
        FILE_MAX_BYTES: '65536',
      },
    })
    bucket = new S3Client({
      bucket: s3.bucket,
      endpoint: s3.endpoint,
      region: 'us-east-1',
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
    })
  }, 60_000)
  afterAll(() => s3?.stop())

  const as = (user: string) => ({ 'x-user-id': user })
  const create = async (user: string, name: string, size: number) => {
    const response = await post(
      t.app,
      '/backend-api/files',
      { file_name: name, file_size: size, use_case: 'multimodal' },
      as(user),
    )
    expect(response.status).toBe(200)
    return (await response.json()) as { file_id: string; upload_url: string }
  }
  const putTo = (url: string, bytes: Uint8Array) =>
    fetch(url, {
      method: 'PUT',
      body: bytes,
      headers: { 'content-type': 'image/png', 'x-ms-blob-type': 'BlockBlob' },
    })

  test('the URLs are the store’s presigned ones; the bytes are checked at uploaded and served by the store', async () => {
    const user = newUser()
    const image = png(5, 4)
    const { file_id, upload_url } = await create(user, 'shot.png', image.byteLength)
    expect(upload_url.startsWith(`${s3.endpoint}/${s3.bucket}/uploads/${file_id}?`)).toBe(true)
    expect(upload_url).toContain('X-Amz-Signature=')
    expect((await putTo(upload_url, image)).status).toBe(200)

    const done = await post(t.app, `/backend-api/files/${file_id}/uploaded`, {}, as(user))
    expect(done.status).toBe(200)
    const info = await get(t.app, `/backend-api/files/${file_id}/download`, as(user))
    const body = (await info.json()) as { download_url: string; mime_type: string }
    expect(body.mime_type).toBe('image/png')
    expect(body.download_url.startsWith(`${s3.endpoint}/${s3.bucket}/files/${file_id}?`)).toBe(true)
    const served = await fetch(body.download_url)
    expect(served.status).toBe(200)
    expect(served.headers.get('content-type')).toBe('image/png')
    expect(Buffer.from(await served.arrayBuffer())).toEqual(Buffer.from(image))
    // The upload's copy is gone; the checked one stays until the file is deleted.
    expect(await bucket.exists(`uploads/${file_id}`)).toBe(false)
    const [row] = await t.db.query(`SELECT width, height FROM files WHERE id = $1`, [file_id])
    expect(row).toEqual({ width: 5, height: 4 })

    const deleted = await t.app.handle(
      new Request(`http://localhost/backend-api/files/${file_id}`, {
        method: 'DELETE',
        headers: as(user),
      }),
    )
    expect(deleted.status).toBe(200)
    expect(await bucket.exists(`files/${file_id}`)).toBe(false)
  })

  test('more bytes than declared reach the store, but uploaded refuses them with a 413 and deletes them', async () => {
    const user = newUser()
    const image = png(20, 20)
    const { file_id, upload_url } = await create(user, 'liar.png', 10)
    expect((await putTo(upload_url, image)).status).toBe(200)
    const refused = await post(t.app, `/backend-api/files/${file_id}/uploaded`, {}, as(user))
    expect(refused.status).toBe(413)
    expect(await refused.json()).toMatchObject({ code: 'file_size_mismatch' })
    expect(await bucket.exists(`uploads/${file_id}`)).toBe(false)
    expect(await bucket.exists(`files/${file_id}`)).toBe(false)
    expect(await t.db.query(`SELECT id FROM files WHERE id = $1`, [file_id])).toEqual([])
  })
})
