// The user's custom instructions (CONTRACT §16) read beside a turn: the
// statements that store a send or claim a turn join them, so the turn starts
// without a read of its own (the cache-aside store, instructions/store.ts,
// serves the routes). Only enabled instructions are read; null otherwise.
import type { EnabledInstructions } from '../messages.ts'

/** The columns for the instructions of `user_system_messages` joined as `alias` (null when off or unset). */
export const userInstructionsColumns = (alias: string) =>
  `CASE WHEN ${alias}.enabled THEN ${alias}.about_user_message END AS about_user,
   CASE WHEN ${alias}.enabled THEN ${alias}.about_model_message END AS about_model`

export type UserInstructionsColumns = { about_user: string | null; about_model: string | null }

/** The instructions of a row with userInstructionsColumns; null when off or unset. */
export const userInstructionsOf = (row: UserInstructionsColumns): EnabledInstructions | null =>
  row.about_user === null && row.about_model === null
    ? null
    : { aboutUser: row.about_user ?? '', aboutModel: row.about_model ?? '' }
