-- Idempotent sends (CONTRACT §14): every send that stores user messages
-- records the id of its first input message, per user, with the turn it
-- started. The primary key is what makes a retried send start nothing: two
-- sends naming one id (a client re-POSTing after a network error, at once on
-- two instances or later) cannot both store it; the one refused finds the
-- first one's turn here and answers with its stream. Ids are per user: the
-- same id from another user is another send, and says nothing about this one.
-- Sends stored before this table existed have no key (a repeat inside their
-- conversation is still refused by messages_conversation_message_key).
CREATE TABLE send_keys (
  user_id          text NOT NULL,
  message_id       text NOT NULL,
  conversation_id  uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  -- The reply the send started: its turn log is the stream a retry answers with.
  reply_id         text NOT NULL,
  PRIMARY KEY (user_id, message_id)
);

-- A deleted conversation takes its keys along (the cascade looks them up by it).
CREATE INDEX send_keys_conversation_idx ON send_keys (conversation_id);
