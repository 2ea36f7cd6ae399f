-- Conversation management (CONTRACT §11): archiving, search over titles and
-- message text, and message feedback.

-- Archived conversations leave the default list (is_archived=false).
ALTER TABLE conversations ADD COLUMN is_archived boolean NOT NULL DEFAULT false;

-- A message's text as clients see it: its parts joined by newlines. Immutable,
-- so an index can hold it; search queries use this same expression.
CREATE FUNCTION message_text(content jsonb) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN array_to_string(ARRAY(SELECT jsonb_array_elements_text(content -> 'parts')), E'\n');

-- Search is a case-insensitive substring match (ILIKE '%…%'); trigrams let a
-- GIN index answer it instead of reading every message. pg_trgm is created
-- by 002 in public; qualified because search_path may not list public first.
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
CREATE INDEX messages_text_trgm_idx ON messages
  USING gin (message_text(content) public.gin_trgm_ops);

-- One rating per user and message; a new rating replaces the old one. It goes
-- with its message (and so with a deleted conversation); the key, led by the
-- message, also serves that cascade.
CREATE TABLE message_feedback (
  user_id          text NOT NULL,
  conversation_id  uuid NOT NULL,
  message_id       text NOT NULL,
  rating           text NOT NULL CHECK (rating IN ('thumbsUp', 'thumbsDown')),
  text             text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conversation_id, message_id, user_id),
  FOREIGN KEY (conversation_id, message_id)
    REFERENCES messages (conversation_id, id) ON DELETE CASCADE
);
