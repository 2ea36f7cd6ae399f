// The browser assets of the docs pages, served by the service itself from npm
// packages (swagger-ui-dist, redoc), so /docs and /redoc work with no internet.
// Paths are resolved when the plugin is built: a missing package fails at
// startup, not on the first visit.
import { gzipSync } from 'bun'

export const ASSET_PREFIX = '/docs/assets'

interface AssetSource {
  /** Module specifier of the file inside its npm package. */
  specifier: string
  contentType: string
  /** Edits the file's text before it is served. */
  patch?: (text: string) => string
}

/** ReDoc's sidebar footer always loads its logo from a CDN; an empty image replaces it. */
export const REDOC_CDN_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg'
const EMPTY_SVG = 'data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22/%3E'

const SOURCES = {
  'swagger-ui-bundle.js': {
    specifier: 'swagger-ui-dist/swagger-ui-bundle.js',
    contentType: 'text/javascript; charset=utf-8',
  },
  'swagger-ui.css': {
    specifier: 'swagger-ui-dist/swagger-ui.css',
    contentType: 'text/css; charset=utf-8',
  },
  'redoc.standalone.js': {
    specifier: 'redoc/bundles/redoc.standalone.js',
    contentType: 'text/javascript; charset=utf-8',
    patch: (text) => text.replaceAll(REDOC_CDN_LOGO, EMPTY_SVG),
  },
} satisfies Record<string, AssetSource>

export type AssetName = keyof typeof SOURCES

export const ASSET_NAMES = Object.keys(SOURCES) as AssetName[]

export const isAssetName = (name: string): name is AssetName =>
  (ASSET_NAMES as string[]).includes(name)

export const assetUrl = (name: AssetName) => `${ASSET_PREFIX}/${name}`

export interface AssetStore {
  /** The asset as a response, gzipped when the client accepts it. */
  respond(name: AssetName, acceptEncoding: string | undefined): Promise<Response>
}

interface Loaded {
  plain: Uint8Array
  gzip: Uint8Array
}

export function createAssetStore(): AssetStore {
  const sources = new Map<AssetName, AssetSource>()
  for (const name of ASSET_NAMES) {
    const source: AssetSource = SOURCES[name]
    sources.set(name, { ...source, specifier: Bun.resolveSync(source.specifier, import.meta.dir) })
  }
  // Each file is read, patched and compressed once, on its first request
  // (the bundles are megabytes and shrink about 4x).
  const loaded = new Map<AssetName, Promise<Loaded>>()
  const load = async (source: AssetSource): Promise<Loaded> => {
    const file = Bun.file(source.specifier)
    const plain = source.patch
      ? new TextEncoder().encode(source.patch(await file.text()))
      : await file.bytes()
    return { plain, gzip: gzipSync(plain) }
  }

  return {
    async respond(name, acceptEncoding) {
      const source = sources.get(name) as AssetSource
      let asset = loaded.get(name)
      if (!asset) {
        asset = load(source)
        loaded.set(name, asset)
      }
      const { plain, gzip } = await asset
      const gzipped = /\bgzip\b/.test(acceptEncoding ?? '')
      return new Response(gzipped ? gzip : plain, {
        headers: {
          'content-type': source.contentType,
          'cache-control': 'public, max-age=86400',
          vary: 'accept-encoding',
          ...(gzipped ? { 'content-encoding': 'gzip' } : {}),
        },
      })
    },
  }
}
