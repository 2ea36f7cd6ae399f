-- Branches (CONTRACT §10): the messages of a conversation form a tree, as on
-- chatgpt.com. Every message names the message it follows (null at the top of
-- the tree), and a conversation remembers its current node: the newest reply
-- of the branch last sent to.

ALTER TABLE messages ADD COLUMN parent_id text;

-- A parent is a message of the same conversation; deleting a conversation
-- deletes its whole tree.
ALTER TABLE messages ADD CONSTRAINT messages_parent_fkey
  FOREIGN KEY (conversation_id, parent_id) REFERENCES messages (conversation_id, id)
  ON DELETE CASCADE;

-- The children of a message (the foreign key's checks on delete, sibling lookups).
CREATE INDEX messages_conversation_parent_idx ON messages (conversation_id, parent_id);

ALTER TABLE conversations ADD COLUMN current_node text;

-- Rows stored before branches were linear: each message follows the one
-- stored just before it in its conversation, and the newest is the current node.
UPDATE messages m SET parent_id = linear.previous
  FROM (SELECT seq, lag(id) OVER (PARTITION BY conversation_id ORDER BY seq) AS previous
          FROM messages) linear
 WHERE m.seq = linear.seq AND linear.previous IS NOT NULL;

UPDATE conversations c SET current_node = newest.id
  FROM (SELECT DISTINCT ON (conversation_id) conversation_id, id
          FROM messages ORDER BY conversation_id, seq DESC) newest
 WHERE c.id = newest.conversation_id;
