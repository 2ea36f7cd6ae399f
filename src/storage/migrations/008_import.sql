-- Imported conversations (CONTRACT §17): a chatgpt.com export holds system
-- and tool messages besides user and assistant ones, and says of each message
-- what this service derives for its own (author name and metadata, recipient,
-- channel, weight, end_turn).

ALTER TABLE messages DROP CONSTRAINT messages_role_check;
ALTER TABLE messages ADD CONSTRAINT messages_role_check
  CHECK (role IN ('user', 'assistant', 'system', 'tool'));

-- What an imported message said of itself in chatgpt.com's shape, shown as it
-- was; null for the messages of this service's own turns.
ALTER TABLE messages ADD COLUMN wire jsonb;

-- Kept in the tree and the detail, but never in a model's context nor as a
-- conversation's last message: imported system and tool messages, messages to
-- a tool, and those chatgpt.com hid from the conversation.
ALTER TABLE messages ADD COLUMN hidden boolean NOT NULL DEFAULT false;

-- The id an imported conversation had in its export: importing the same file
-- again finds it and stores nothing new.
ALTER TABLE conversations ADD COLUMN import_source text;
CREATE UNIQUE INDEX conversations_user_import_source_key ON conversations (user_id, import_source)
  WHERE import_source IS NOT NULL;
