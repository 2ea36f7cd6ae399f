// Limits of POST /query (spec §8, CONTRACT §6), shared by its schema and its use case.

export const DEFAULT_TOP_K = 5
export const MAX_TOP_K = 100
