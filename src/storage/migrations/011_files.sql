-- Attachments (CONTRACT §20): one row per uploaded file, its bytes in the
-- FileStore (a folder or S3) under keys made from its id. A row is `pending`
-- from POST /files until POST /files/{id}/uploaded has checked the bytes and
-- read their contents, then `ready`; a file refused then is deleted. The
-- extracted text of a document lives here, with its owner, so only its owner's
-- searches (§21 document_search) ever see it, and deleting the file deletes it.
CREATE TABLE files (
  id             text PRIMARY KEY CHECK (id ~ '^file-[0-9a-f]{32}$'),
  user_id        text NOT NULL,
  -- As the client named it: shown, never used as a path.
  name           text NOT NULL,
  use_case       text NOT NULL,
  -- The file_size the client declared; a pending file counts this much against the quota.
  declared_size  bigint NOT NULL CHECK (declared_size >= 0),
  status         text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'ready')),
  -- Set when ready: the real size, the type read from the bytes, an image's dimensions.
  size_bytes     bigint,
  mime_type      text,
  width          integer,
  height         integer,
  -- A document's text (UTF-8 text as uploaded, a PDF's extracted text); null for an image.
  text           text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  uploaded_at    timestamptz
);

CREATE INDEX files_user_idx ON files (user_id, created_at);

-- A user's documents searched by words (§21 document_search), over the first
-- 100,000 characters as for the document store (a tsvector holds at most 1 MB).
CREATE INDEX files_text_fts_idx ON files
  USING gin (to_tsvector('english', left(text, 100000)))
  WHERE text IS NOT NULL;
