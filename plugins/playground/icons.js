// The playground's icons: small inline SVGs drawn with strokes (shapes after
// the Feather icon set), so buttons need no image files and no emoji font.
const SVG = 'http://www.w3.org/2000/svg'

const PATHS = {
  copy: ['M9 9h11v11H9z', 'M5 15H4a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1h10a1 1 0 0 1 1 1v1'],
  check: ['M20 6 9 17l-5-5'],
  thumbsUp: [
    'M14 9V5a3 3 0 0 0-3-3l-4 9v11h11.3a2 2 0 0 0 2-1.7l1.4-9a2 2 0 0 0-2-2.3z',
    'M7 22H4a2 2 0 0 1-2-2v-7a2 2 0 0 1 2-2h3',
  ],
  thumbsDown: [
    'M10 15v4a3 3 0 0 0 3 3l4-9V2H5.7a2 2 0 0 0-2 1.7l-1.4 9a2 2 0 0 0 2 2.3z',
    'M17 2h2.7A2.3 2.3 0 0 1 22 4v7a2.3 2.3 0 0 1-2.3 2H17',
  ],
  regenerate: ['M23 4v6h-6', 'M20.5 15a9 9 0 1 1-2.1-9.4L23 10'],
  edit: ['M17 3a2.8 2.8 0 1 1 4 4L7.5 20.5 2 22l1.5-5.5z'],
  previous: ['m15 18-6-6 6-6'],
  next: ['m9 18 6-6-6-6'],
}

/**
 * An icon as an SVG element (hidden from screen readers: its button has a label).
 * @param {keyof typeof PATHS} name
 */
export function icon(name) {
  const svg = document.createElementNS(SVG, 'svg')
  svg.setAttribute('viewBox', '0 0 24 24')
  svg.setAttribute('aria-hidden', 'true')
  svg.classList.add('icon')
  for (const d of PATHS[name]) {
    const path = document.createElementNS(SVG, 'path')
    path.setAttribute('d', d)
    svg.append(path)
  }
  return svg
}
