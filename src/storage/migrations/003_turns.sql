-- Turns that belong to the deployment (CONTRACT §12-§13). An assistant reply is
-- stored as an `in_progress` row when its send is accepted, in the same
-- transaction as the user messages: the in-progress rows of a conversation,
-- in seq order, are its queue of turns, so every instance sees one order.

-- What the reply was produced with and how it ended: model_slug, parent_id,
-- the send's temperature, and finish_details once it is finished.
ALTER TABLE messages ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}';

-- Fencing token of the runner that claimed the turn; null while it is queued.
-- A runner writes the reply only while the row holds its token, so an owner
-- that lost its lease can no longer write.
ALTER TABLE messages ADD COLUMN run_token bigint;

-- A stop asked for while the turn was queued or just starting (CONTRACT §12):
-- the runner that claims the turn ends it at once instead of running it.
ALTER TABLE messages ADD COLUMN stop_requested boolean NOT NULL DEFAULT false;

-- The queue: in-progress replies by conversation, and the sweep that finds
-- conversations whose runner died.
CREATE INDEX messages_in_progress_idx ON messages (conversation_id, seq)
  WHERE status = 'in_progress';
