// The HTML of /docs (Swagger UI) and /redoc (ReDoc), and their start-up
// scripts. Scripts are separate files, not inline, so the pages' Content
// Security Policy can allow only this origin: a browser then fetches nothing
// from another host, even if a future bundle version tries to.
import { assetUrl } from './assets.ts'

export const SPEC_PATH = '/docs/json'
export const INIT_SWAGGER_PATH = '/docs/assets/swagger-init.js'
export const INIT_REDOC_PATH = '/docs/assets/redoc-init.js'

export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  // Both UIs set inline styles at runtime (ReDoc through styled-components).
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  // ReDoc runs its search index in a worker built from a blob.
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'self'",
].join('; ')

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)

function page(title: string, head: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
${head}
</head>
<body style="margin:0">
${body}
</body>
</html>
`
}

export function swaggerPage(title: string): string {
  return page(
    title,
    `<link rel="stylesheet" href="${assetUrl('swagger-ui.css')}">`,
    `<div id="swagger-ui"></div>
<script src="${assetUrl('swagger-ui-bundle.js')}"></script>
<script src="${INIT_SWAGGER_PATH}"></script>`,
  )
}

export function redocPage(title: string): string {
  return page(
    title,
    '',
    `<div id="redoc"></div>
<script src="${assetUrl('redoc.standalone.js')}"></script>
<script src="${INIT_REDOC_PATH}"></script>`,
  )
}

// validatorUrl null: Swagger UI would otherwise send the spec to validator.swagger.io.
export const swaggerInit = `window.ui = SwaggerUIBundle(${JSON.stringify({
  url: SPEC_PATH,
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
})})
`

export const redocInit = `Redoc.init(${JSON.stringify(SPEC_PATH)}, ${JSON.stringify({
  expandResponses: '200',
})}, document.getElementById('redoc'))
`
