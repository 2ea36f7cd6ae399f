// Every child process the harness starts is tracked here and killed when the
// harness exits, whatever the reason (error, Ctrl-C, watchdog): a benchmark
// must never leave a server or a client swarm behind.
import type { Subprocess } from 'bun'

const running = new Set<Subprocess>()

process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => process.exit(130))
}

/** Tracks `child` until it exits. */
export function track<T extends Subprocess>(child: T): T {
  running.add(child)
  void child.exited.then(() => running.delete(child))
  return child
}

/** SIGTERM, then SIGKILL when `child` has not exited within `graceMs`. */
export async function terminate(child: Subprocess, graceMs: number): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM')
    const exited = await Promise.race([
      child.exited.then(() => true),
      Bun.sleep(graceMs).then(() => false),
    ])
    if (!exited) child.kill('SIGKILL')
  }
  await child.exited
}

/** Keeps the last `limit` characters of a child's output, to explain a failure. */
export function tail(stream: ReadableStream<Uint8Array>, limit = 8_000): () => string {
  let text = ''
  const decoder = new TextDecoder()
  void (async () => {
    for await (const chunk of stream)
      text = (text + decoder.decode(chunk, { stream: true })).slice(-limit)
  })().catch(() => {})
  return () => text
}
