// The ToolCatalogue over its sources: lists their tools under unique names
// (tool-names.ts) and runs a call within its deadline. Every way a call can
// go wrong - an unknown name, arguments that are not a JSON object, a source
// that throws, hangs past TOOL_TIMEOUT_MS or is stopped - is an error result;
// the turn that asked never sees a throw (CONTRACT §21).
import type {
  ToolCallContext,
  ToolCatalogue,
  ToolDefinition,
  ToolResult,
  ToolSource,
} from './catalogue.ts'
import { offeredNames } from './tool-names.ts'
import { capResult, errorResult } from './tool-result.ts'

export interface ToolCatalogueOptions {
  sources: ToolSource[]
  /** TOOL_TIMEOUT_MS: the longest one call may take. */
  timeoutMs: number
  /** TOOL_OUTPUT_MAX_CHARS: results are cut to this. */
  maxOutputChars: number
  /** Told about calls that failed inside a source (not about the model's own mistakes). */
  warn?: (message: string, error: unknown) => void
}

interface Route {
  source: ToolSource
  /** The tool's name in its source. */
  name: string
}

/** The arguments as a JSON object, or the error the model is told. */
function parseArguments(text: string): Record<string, unknown> | string {
  if (text.trim() === '') return {}
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return "The arguments are not valid JSON; send a JSON object matching the tool's parameters."
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return "The arguments must be a JSON object matching the tool's parameters."
  return value as Record<string, unknown>
}

/** Resolves with the call's result, or an error result once `signal` aborts. */
function within(
  work: Promise<ToolResult>,
  signal: AbortSignal,
  onAbort: () => ToolResult,
): Promise<ToolResult> {
  if (signal.aborted) return Promise.resolve(onAbort())
  return new Promise((resolve, reject) => {
    const abort = () => resolve(onAbort())
    signal.addEventListener('abort', abort, { once: true })
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort))
  })
}

export function createToolCatalogue(options: ToolCatalogueOptions): ToolCatalogue {
  let routes = new Map<string, Route>()

  async function list(): Promise<ToolDefinition[]> {
    const listed = await Promise.all(
      options.sources.map(async (source) => {
        try {
          return (await source.tools()).map((tool) => ({
            source: source.name,
            name: tool.name,
            value: { tool, source },
          }))
        } catch (error) {
          options.warn?.(`tools of ${source.name} could not be listed`, error)
          return []
        }
      }),
    )
    const offered = offeredNames(listed.flat())
    routes = new Map(
      [...offered].map(([name, { value }]) => [
        name,
        { source: value.source, name: value.tool.name },
      ]),
    )
    return [...offered].map(([name, { value }]) => ({ ...value.tool, name }))
  }

  async function call(name: string, args: string, context: ToolCallContext): Promise<ToolResult> {
    const deadline = AbortSignal.any([context.signal, AbortSignal.timeout(options.timeoutMs)])
    const onAbort = () =>
      errorResult(
        context.signal.aborted
          ? 'The call was cancelled.'
          : `The tool ${name} did not answer within ${options.timeoutMs / 1000} s.`,
      )
    try {
      return await within(
        (async () => {
          // A tool the last list did not have may have appeared since (a server that came back).
          if (!routes.has(name)) await list()
          const route = routes.get(name)
          if (route === undefined)
            return errorResult(`There is no tool named ${JSON.stringify(name)}.`)
          const parsed = parseArguments(args)
          if (typeof parsed === 'string') return errorResult(parsed)
          const result = await route.source.call(route.name, parsed, {
            ...context,
            signal: deadline,
          })
          return capResult(result, options.maxOutputChars)
        })(),
        deadline,
        onAbort,
      )
    } catch (error) {
      options.warn?.(`the tool ${name} failed`, error)
      const detail = error instanceof Error && error.message ? `: ${error.message}` : '.'
      return capResult(errorResult(`The tool ${name} failed${detail}`), options.maxOutputChars)
    }
  }

  return {
    list,
    call,
    start() {
      for (const source of options.sources) source.start?.()
    },
    async close() {
      await Promise.allSettled(options.sources.map((source) => source.close?.()))
    },
  }
}
