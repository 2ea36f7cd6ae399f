-- Shared links (CONTRACT §23): a conversation's branch from the top of the
-- tree down to one message, readable by anyone with the link while public.
-- The branch is read through the tree (a message's parent never changes), so
-- what is added to the conversation later is not shared; deleting the
-- conversation deletes its links. One link per conversation and message:
-- sharing the same message again answers the link already made. The owner is
-- the conversation's: no user id is kept here.
CREATE TABLE shares (
  id               uuid PRIMARY KEY,
  conversation_id  uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  current_node_id  text NOT NULL CHECK (length(current_node_id) BETWEEN 1 AND 128),
  title            text NOT NULL,
  is_public        boolean NOT NULL DEFAULT true,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (conversation_id, current_node_id)
);
