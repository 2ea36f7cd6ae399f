-- Attachments (CONTRACT §20): a user message may now hold image asset
-- pointers among its parts (`multimodal_text`). A message's searchable text is
-- its text parts alone, joined by newlines as before: a pointer is not text a
-- person wrote, and its JSON must not match a search. The function is the
-- expression of the trigram index, so the index is rebuilt with it.
CREATE OR REPLACE FUNCTION message_text(content jsonb) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN array_to_string(ARRAY(
    SELECT part #>> '{}'
      FROM jsonb_array_elements(
             CASE WHEN jsonb_typeof(content -> 'parts') = 'array' THEN content -> 'parts'
                  ELSE '[]'::jsonb END) WITH ORDINALITY AS p(part, n)
     WHERE jsonb_typeof(part) = 'string'
     ORDER BY n), E'\n');

REINDEX INDEX messages_text_trgm_idx;
