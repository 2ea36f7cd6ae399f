-- Models chosen per conversation, and custom instructions (CONTRACT §15-§16).

-- The model a send that names none ("auto") is answered with: the model of
-- the conversation's first send, then of each send that names one. NULL (a
-- conversation stored before): the catalogue's default. IF NOT EXISTS: the
-- chatgpt.com conversation fields (§17) need the same column.
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS default_model_slug text;

-- Conversations stored before: the model that wrote their current reply.
UPDATE conversations c SET default_model_slug = m.metadata ->> 'model_slug'
  FROM messages m
 WHERE m.conversation_id = c.id AND m.id = c.current_node AND c.default_model_slug IS NULL;

-- A user's custom instructions (chatgpt.com's user_system_messages): the two
-- texts, whether they apply, and the fields of newer clients this service
-- does not read, kept and returned as they were sent.
CREATE TABLE user_system_messages (
  user_id              text PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  enabled              boolean NOT NULL DEFAULT false,
  about_user_message   text NOT NULL DEFAULT '' CHECK (length(about_user_message) <= 1500),
  about_model_message  text NOT NULL DEFAULT '' CHECK (length(about_model_message) <= 1500),
  other_fields         jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(other_fields) = 'object'),
  updated_at           timestamptz NOT NULL DEFAULT now()
);
