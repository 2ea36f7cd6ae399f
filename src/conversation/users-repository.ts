// SQL for the users table: a user row exists from the user's first send.
import type { Queryable } from '../storage/db.ts'

export async function ensureUser(tx: Queryable, userId: string): Promise<void> {
  await tx.query('INSERT INTO users (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [userId])
}
