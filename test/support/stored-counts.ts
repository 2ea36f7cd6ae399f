// How many rows the service has stored, for the tests of bad input: a refused
// request must leave every count as it was (CONTRACT §3).
import type { Db } from '../../src/storage/db.ts'

export type StoredCounts = {
  users: number
  conversations: number
  messages: number
  documents: number
}

/** The row counts of the tables a request can write to. */
export async function storedCounts(db: Db): Promise<StoredCounts | undefined> {
  const [row] = await db.query<StoredCounts>(
    `SELECT (SELECT count(*)::int FROM users) AS users,
            (SELECT count(*)::int FROM conversations) AS conversations,
            (SELECT count(*)::int FROM messages) AS messages,
            (SELECT count(*)::int FROM documents) AS documents`,
  )
  return row
}
