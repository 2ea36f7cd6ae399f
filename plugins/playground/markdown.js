// The playground's Markdown: a message's text parsed by marked (GitHub
// flavoured, the way chat replies are written) and the HTML it makes cleaned
// by DOMPurify before any of it reaches the page, so nothing in a model's or
// a user's text runs: no script, no event handler attribute, no javascript:
// link (the page's CSP forbids inline script as a second guard). Links open
// in a new tab without giving it this page.
import { Marked } from './vendor/marked.js'
import DOMPurify from './vendor/purify.js'

const marked = new Marked({ gfm: true, breaks: false, async: false })

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank')
    node.setAttribute('rel', 'noopener noreferrer')
  }
})

/**
 * Fills `target` with `text` rendered as Markdown, sanitised.
 * @param {HTMLElement} target
 * @param {string} text
 */
export function renderMarkdown(target, text) {
  // Without the newline after the last block, the text shown ends where the reply does.
  const html = marked.parse(text).trim()
  const safe = DOMPurify.sanitize(html, {
    RETURN_DOM_FRAGMENT: true,
    // Forms and styles from a reply could dress up as the page's own controls.
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select'],
    FORBID_ATTR: ['style'],
  })
  target.replaceChildren(safe)
}
