import { Elysia } from 'elysia'
export function playgroundPlugin() {
  return new Elysia({ name: 'playground' })
}
