// The document store's cache keys and their lifetimes (spec §4 and §8), in one
// place so routes, tests and operators agree on them.

/** Holds the id of a stored document, keyed by the SHA-256 of its content. */
export const documentKey = (contentSha256: string) => `doc:${contentSha256}`

/** Holds the JSON of the newest documents, as GET /documents answers them. */
export const DOCUMENT_LIST_KEY = 'documents:list'

export const DOCUMENT_KEY_TTL_SECONDS = 3600
export const DOCUMENT_LIST_TTL_SECONDS = 60
export const DOCUMENT_LIST_LIMIT = 100
