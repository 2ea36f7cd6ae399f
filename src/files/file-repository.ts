// The SQL of attachments (migration 011_files.sql): a user's file rows, the
// bytes they count against the quota, and the step from pending to ready.
// Every read names the owner: another user's file is not found, never shown.
import type { Db, Queryable } from '../storage/db.ts'

export interface FileRow {
  id: string
  name: string
  useCase: string
  declaredSize: number
  status: 'pending' | 'ready'
  sizeBytes: number | null
  mimeType: string | null
  width: number | null
  height: number | null
}

export interface ReadyFile extends FileRow {
  status: 'ready'
  sizeBytes: number
  mimeType: string
  /** A document's extracted text; null for an image. */
  text: string | null
}

const COLUMNS = `id, name, use_case AS "useCase", declared_size::float8 AS "declaredSize", status,
  size_bytes::float8 AS "sizeBytes", mime_type AS "mimeType", width, height`

export interface NewFile {
  id: string
  userId: string
  name: string
  useCase: string
  declaredSize: number
}

export interface Contents {
  sizeBytes: number
  mimeType: string
  width?: number
  height?: number
  text?: string
}

export function createFileRepository(db: Db) {
  /**
   * Bytes the user's files take: ready files by their size, pending ones by
   * what was declared while their upload URL may still be used.
   */
  const usedBytes = async (tx: Queryable, userId: string, pendingSeconds: number, except = '') => {
    const [row] = await tx.query<{ used: number }>(
      `SELECT coalesce(sum(CASE WHEN status = 'ready' THEN size_bytes ELSE declared_size END), 0)::float8 AS used
       FROM files
       WHERE user_id = $1 AND id <> $3
         AND (status = 'ready' OR created_at > now() - make_interval(secs => $2))`,
      [userId, pendingSeconds, except],
    )
    return row?.used ?? 0
  }

  /** Serializes one user's quota checks (two uploads at once cannot both pass). */
  const lockUser = (tx: Queryable, userId: string) =>
    tx.query(`SELECT pg_advisory_xact_lock(hashtext('files:' || $1))`, [userId])

  return {
    /**
     * Inserts the pending file if the user's files plus it stay within quota
     * bytes; returns the bytes used before it when they would not (nothing stored).
     */
    async insertWithinQuota(
      file: NewFile,
      quota: number,
      pendingSeconds: number,
    ): Promise<{ inserted: true } | { inserted: false; used: number }> {
      return db.transaction(async (tx) => {
        await lockUser(tx, file.userId)
        const used = await usedBytes(tx, file.userId, pendingSeconds)
        if (used + file.declaredSize > quota) return { inserted: false, used }
        await tx.query(
          `INSERT INTO files (id, user_id, name, use_case, declared_size) VALUES ($1, $2, $3, $4, $5)`,
          [file.id, file.userId, file.name, file.useCase, file.declaredSize],
        )
        return { inserted: true }
      })
    },

    async find(userId: string, id: string): Promise<FileRow | undefined> {
      const [row] = await db.query<FileRow & Record<string, unknown>>(
        `SELECT ${COLUMNS} FROM files WHERE user_id = $1 AND id = $2`,
        [userId, id],
      )
      return row
    },

    /** The user's ready files of ids, with their text, in no particular order. */
    async readyFiles(userId: string, ids: readonly string[]): Promise<ReadyFile[]> {
      if (ids.length === 0) return []
      return db.query<ReadyFile & Record<string, unknown>>(
        `SELECT ${COLUMNS}, text FROM files
         WHERE user_id = $1 AND id = ANY($2::text[]) AND status = 'ready'`,
        [userId, ids],
      )
    },

    /**
     * Marks the pending file ready with what was read from it, if the user's
     * other files plus its real size stay within quota; false (and nothing
     * changed) when they would not.
     */
    async markReady(
      userId: string,
      id: string,
      contents: Contents,
      quota: number,
      pendingSeconds: number,
    ): Promise<boolean> {
      return db.transaction(async (tx) => {
        await lockUser(tx, userId)
        const used = await usedBytes(tx, userId, pendingSeconds, id)
        if (used + contents.sizeBytes > quota) return false
        await tx.query(
          `UPDATE files SET status = 'ready', size_bytes = $3, mime_type = $4, width = $5,
             height = $6, text = $7, uploaded_at = now()
           WHERE user_id = $1 AND id = $2`,
          [
            userId,
            id,
            contents.sizeBytes,
            contents.mimeType,
            contents.width ?? null,
            contents.height ?? null,
            contents.text ?? null,
          ],
        )
        return true
      })
    },

    /** Deletes the row (its text with it); whether there was one. */
    async remove(userId: string, id: string): Promise<boolean> {
      const rows = await db.query(`DELETE FROM files WHERE user_id = $1 AND id = $2 RETURNING id`, [
        userId,
        id,
      ])
      return rows.length > 0
    },
  }
}

export type FileRepository = ReturnType<typeof createFileRepository>
