// Lua scripts live in .lua files and are imported as text
// (`import lua from './x.lua' with { type: 'text' }`), which Bun does itself;
// this tells TypeScript what such an import is.
declare module '*.lua' {
  const text: string
  export default text
}
