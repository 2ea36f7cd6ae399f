// The read-only page of a shared link (GET /share/{id}, CONTRACT §23),
// rendered on the server from the shared object: no script, every text
// escaped, and a Content-Security-Policy that would stop a script even if
// something slipped through. A message's text parts are shown as text; a
// part of another kind (an image, a file) by its kind.
import type { MessageContent } from '../messages.ts'
import type { SharedConversation } from './shares.ts'

/** No script, no outside resource: only the page's own inline style. */
export const SHARE_PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}

/** Text safe between tags and inside quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => ESCAPES[character] ?? character)
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem;color:#1f2328}
h1{font-size:1.4rem}.message{border-top:1px solid #d0d7de;padding:.75rem 0}
.role{font-weight:600;text-transform:capitalize}.text{white-space:pre-wrap;overflow-wrap:anywhere}
.note{color:#59636e;font-size:.9rem}`

/** The parts of a message as text: strings as they are, anything else by its content type. */
function textOf(content: MessageContent): string {
  const parts: unknown[] = Array.isArray(content.parts) ? content.parts : []
  return parts
    .map((part) => (typeof part === 'string' ? part : `[${String(content.content_type)}]`))
    .join('\n')
}

export function sharePage(shared: SharedConversation): string {
  const messages = shared.messages
    .map(
      (message) =>
        `<article class="message"><div class="role">${escapeHtml(message.role)}</div><div class="text">${escapeHtml(
          textOf(message.content),
        )}</div></article>`,
    )
    .join('\n')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(shared.title)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>${escapeHtml(shared.title)}</h1>
<p class="note">A shared conversation, read-only.</p>
${messages}
</body>
</html>
`
}

/** The page of a link that is missing, private, or whose conversation is gone. */
export const NOT_SHARED_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Not found</title><style>${STYLE}</style></head>
<body><h1>Not found</h1><p class="note">This shared conversation does not exist or is no longer shared.</p></body></html>
`
