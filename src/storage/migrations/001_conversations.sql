-- Users, their conversations and the conversations' messages.

CREATE TABLE users (
  id          text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 128),
  name        text,
  email       text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE conversations (
  id          uuid PRIMARY KEY,
  user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  title       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The conversation list reads a user's conversations, newest first, in either order.
CREATE INDEX conversations_user_updated_idx ON conversations (user_id, updated_at DESC);
CREATE INDEX conversations_user_created_idx ON conversations (user_id, created_at DESC);

CREATE TABLE messages (
  -- Creation order within a conversation: timestamps can tie inside one transaction.
  seq              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id               text NOT NULL CHECK (length(id) BETWEEN 1 AND 128),
  conversation_id  uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  role             text NOT NULL CHECK (role IN ('user', 'assistant')),
  content          jsonb NOT NULL,
  status           text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  -- A retried send cannot store a message id twice in one conversation.
  CONSTRAINT messages_conversation_message_key UNIQUE (conversation_id, id)
);

-- History and context read a conversation's messages in creation order.
CREATE INDEX messages_conversation_seq_idx ON messages (conversation_id, seq);
