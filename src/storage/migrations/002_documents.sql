-- The document store (spec/document-store.md, CONTRACT §6): the documents
-- table, its search indexes, and the four rows every new database starts with.

-- Trigram operators let a GIN index answer ILIKE '%…%'. The extension lives in
-- public so every schema (tests use one per run) shares a single copy.
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

CREATE TABLE documents (
  id              integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  content         text NOT NULL CHECK (content <> ''),
  -- The submitted metadata object as JSON text (the spec stores its string form).
  metadata        text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  -- Hex SHA-256 of the UTF-8 content: the database itself refuses a duplicate,
  -- so a flushed doc:<hash> cache key can never let one in.
  content_sha256  text NOT NULL CHECK (content_sha256 ~ '^[0-9a-f]{64}$'),
  CONSTRAINT documents_content_sha256_key UNIQUE (content_sha256)
);

-- Full-text search over content (spec: "a text-search index exists on content").
-- Over the first 100,000 characters only: a tsvector holds at most 1 MB, which
-- a 1 MB document of distinct words exceeds, and the index would then refuse
-- the insert. Full-text queries use this same expression.
CREATE INDEX documents_content_fts_idx ON documents
  USING gin (to_tsvector('english', left(content, 100000)));

-- POST /query is a case-insensitive substring match; trigrams keep it off a
-- sequential scan on large tables. Qualified because search_path may not list
-- public first.
CREATE INDEX documents_content_trgm_idx ON documents USING gin (content public.gin_trgm_ops);

INSERT INTO documents (content, metadata, content_sha256)
SELECT content, metadata, encode(sha256(convert_to(content, 'UTF8')), 'hex')
FROM (VALUES
  (
    'PostgreSQL is an open-source relational database with transactions, JSON columns and built-in full-text search.',
    '{"source":"postgresql-overview","topic":"database"}'
  ),
  (
    'Redis keeps data in memory and is often used as a cache with per-key expiry, so repeated reads skip the database.',
    '{"source":"redis-overview","topic":"cache"}'
  ),
  (
    'Cache-aside: read the cache first, fall back to the database on a miss, then store the result with a time to live.',
    '{"source":"caching-patterns","topic":"architecture"}'
  ),
  (
    'A health endpoint reports whether the service can reach its dependencies, so load balancers stop sending traffic to a broken instance.',
    '{"source":"operations-handbook","topic":"operations"}'
  )
) AS preloaded (content, metadata);
