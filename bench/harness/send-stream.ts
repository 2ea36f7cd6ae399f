// The send + stream scenario: a few clients in a closed loop, each sending one
// message to a new conversation and reading the reply to [DONE], again and
// again for the scenario's duration. Measures the cost of a whole turn.
import { type StreamResult, sendAndStream } from './sse-client.ts'
import { type StreamSummary, summarizeStreams } from './stream-summary.ts'

export interface SendStreamSettings {
  concurrency: number
  durationSec: number
}

/** Far above what a few seconds can reach; only a guard against a runaway loop. */
const MAX_STREAMS_PER_CLIENT = 100_000

/** Client i sends to baseUrls[i % length] (one server, a load balancer, or each server in turn). */
export async function runSendStream(
  baseUrls: string | string[],
  runId: string,
  settings: SendStreamSettings,
): Promise<StreamSummary> {
  const started = performance.now()
  const deadline = started + settings.durationSec * 1000
  const results: StreamResult[] = []
  const targets = typeof baseUrls === 'string' ? [baseUrls] : baseUrls
  const client = async (index: number) => {
    const baseUrl = targets[index % targets.length] ?? ''
    for (let turn = 0; turn < MAX_STREAMS_PER_CLIENT && performance.now() < deadline; turn++) {
      results.push(
        await sendAndStream({
          baseUrl,
          userId: `${runId}-sender-${index}`,
          text: `Streaming benchmark turn ${turn}: please answer with a few words.`,
          timeoutMs: 30_000,
        }),
      )
    }
  }
  await Promise.all(Array.from({ length: settings.concurrency }, (_, index) => client(index)))
  return summarizeStreams(results, (performance.now() - started) / 1000)
}
