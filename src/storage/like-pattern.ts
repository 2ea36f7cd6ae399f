// Turns text into an ILIKE pattern that matches it as a literal
// substring: `%`, `_` and the escape character itself lose their meaning.
// Shared by the document store's query and the conversation search.

/** The escape character named in the query's ESCAPE clause. */
export const LIKE_ESCAPE = '\\'

/** `50%_off` → `%50\%\_off%`: "contains this text", nothing more. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (char) => LIKE_ESCAPE + char)}%`
}
