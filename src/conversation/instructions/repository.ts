// SQL for custom instructions (table user_system_messages, migration 007):
// read a user's, and change them in a transaction that locks the row, so two
// concurrent changes both apply. Runs unchanged on postgres.js and PGlite.
import type { Db, Queryable } from '../../storage/db.ts'
import {
  applyChange,
  type CustomInstructions,
  type InstructionsChange,
  NO_INSTRUCTIONS,
} from './instructions.ts'

type Row = {
  enabled: boolean
  about_user_message: string
  about_model_message: string
  other_fields: Record<string, unknown>
}

const COLUMNS = 'enabled, about_user_message, about_model_message, other_fields'

const fromRow = (row: Row | undefined): CustomInstructions =>
  row
    ? {
        enabled: row.enabled,
        aboutUser: row.about_user_message,
        aboutModel: row.about_model_message,
        otherFields: row.other_fields,
      }
    : NO_INSTRUCTIONS

/** The user's instructions; the defaults (off, empty) when they never set any. */
export async function readInstructions(db: Queryable, userId: string): Promise<CustomInstructions> {
  const rows = await db.query<Row>(
    `SELECT ${COLUMNS} FROM user_system_messages WHERE user_id = $1`,
    [userId],
  )
  return fromRow(rows[0])
}

/** Applies a change to the user's instructions (creating the user row if new); resolves with the result. */
export async function changeInstructions(
  db: Db,
  userId: string,
  change: InstructionsChange,
): Promise<CustomInstructions> {
  return db.transaction(async (tx) => {
    await tx.query('INSERT INTO users (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [userId])
    const rows = await tx.query<Row>(
      `SELECT ${COLUMNS} FROM user_system_messages WHERE user_id = $1 FOR UPDATE`,
      [userId],
    )
    const next = applyChange(fromRow(rows[0]), change)
    await tx.query(
      `INSERT INTO user_system_messages AS s (user_id, ${COLUMNS}, updated_at)
       VALUES ($1, $2, $3, $4, $5::text::jsonb, now())
       ON CONFLICT (user_id) DO UPDATE SET enabled = EXCLUDED.enabled,
         about_user_message = EXCLUDED.about_user_message,
         about_model_message = EXCLUDED.about_model_message,
         other_fields = EXCLUDED.other_fields, updated_at = now()`,
      [userId, next.enabled, next.aboutUser, next.aboutModel, JSON.stringify(next.otherFields)],
    )
    return next
  })
}
