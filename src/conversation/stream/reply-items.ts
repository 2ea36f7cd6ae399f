// The items of a turn whose model reasons or calls tools (CONTRACT §21), in
// stream order, as a pure state machine the runner feeds with the model's
// events: it decides when a thoughts message opens and closes, numbers each
// message's `add` (`c`), and adds the reply again once other messages came
// after its first add (the prefix's, c 0), so every parser patches the
// right message. The reply added again starts empty, later than the last
// step and as its child: the tree reads user → thoughts / call → tool → reply,
// as chatgpt.com's does. Its `parts` appends are the only ones in the turn,
// so their concatenation is the reply's text (what appendedText recovers and
// what gpt4free and chat2api rebuild). It also keeps what the turn must
// store of each step message (steps()).
import {
  type AssistantStart,
  assistantStartMessage,
  type MessageContent,
  turnStepTime,
} from '../messages.ts'
import { appendFrame, frameOf, type StreamItem } from './encoding.ts'
import {
  messageAddItem,
  type StepMessageBase,
  stepCompletionItem,
  thoughtsAppendItem,
  thoughtsMessage,
  toolCallMessage,
  toolResultMessage,
} from './step-items.ts'

/** A message of the turn other than the reply, as it is stored (and shown in the mapping). */
export interface StepRecord {
  id: string
  role: 'assistant' | 'tool'
  /** The tool's name for a tool message. */
  authorName: string | null
  content: MessageContent
  status: 'finished_successfully' | 'in_progress'
  endTurn: boolean | null
  recipient: string
  channel: string | null
  metadata: Record<string, unknown>
  createTime: number
  parentId: string
}

export interface ReplyItemsOptions {
  conversationId: string
  /** The reply as the prefix added it. */
  reply: AssistantStart
  newId: () => string
  /** Unix seconds with a fraction, now (each step is later than the one before). */
  now: () => number
}

const frames = (items: StreamItem[]) => items.map(frameOf)

export class ReplyItems {
  private readonly steps_: StepRecord[] = []
  /** The `c` of the last add; the prefix's add of the reply is 0. */
  private c = 0
  /** Whether the last add was the reply's (its appends go to it). */
  private replyIsCurrent = true
  private openThoughts: StepRecord | undefined
  private lastTime: number
  /** The reply as last added: its parent and create time change when it is added again. */
  private replyNow: AssistantStart

  constructor(private readonly options: ReplyItemsOptions) {
    this.replyNow = options.reply
    this.lastTime = options.reply.createTime
  }

  /** The reply's parent and create time as last streamed: what it is stored with. */
  get reply(): AssistantStart {
    return this.replyNow
  }

  /** The step messages so far, in order (an open thoughts message with its text so far). */
  steps(): readonly StepRecord[] {
    return this.steps_
  }

  /** Frames for a piece of reasoning: a thoughts message opens first unless one is open. */
  reasoning(chunk: string): string[] {
    const out: StreamItem[] = []
    if (!this.openThoughts) {
      const base = this.nextBase()
      const message = thoughtsMessage(base)
      this.openThoughts = this.record(base, {
        role: 'assistant',
        authorName: null,
        content: structuredClone(message.content),
        status: 'in_progress',
        endTurn: null,
        recipient: 'all',
        channel: 'analysis',
        metadata: message.metadata,
      })
      out.push(this.add(message))
    }
    const [thought] = this.openThoughts.content.thoughts as { content: string }[]
    if (thought) thought.content += chunk
    out.push(thoughtsAppendItem(chunk))
    return frames(out)
  }

  /** Frames for a piece of the reply's text: thoughts closed, the reply added again if needed. */
  text(chunk: string): string[] {
    // The common case, a reply with no steps: one frame, nothing else built.
    if (this.replyIsCurrent && !this.openThoughts) return [appendFrame(chunk)]
    return [...this.toReply(), appendFrame(chunk)]
  }

  /** Frames for one call, whole; its id is the message's (a tool result names it). */
  toolCall(tool: string, args: string): { frames: string[]; messageId: string } {
    const out = this.closeThoughts()
    const base = this.nextBase()
    const message = toolCallMessage(base, tool, args)
    this.record(base, {
      role: 'assistant',
      authorName: null,
      content: message.content,
      status: 'finished_successfully',
      endTurn: false,
      recipient: tool,
      channel: null,
      metadata: message.metadata,
    })
    return {
      frames: [...out, ...frames([this.add(message), stepCompletionItem()])],
      messageId: base.id,
    }
  }

  /** The frame of a tool's answer: one add, nothing appended. */
  toolResult(tool: string, result: { text: string; isError: boolean }): string[] {
    const out = this.closeThoughts()
    const base = this.nextBase()
    const message = toolResultMessage(base, tool, result)
    this.record(base, {
      role: 'tool',
      authorName: tool,
      content: message.content,
      status: 'finished_successfully',
      endTurn: null,
      recipient: 'all',
      channel: null,
      metadata: message.metadata,
    })
    return [...out, ...frames([this.add(message)])]
  }

  /**
   * Frames that make the reply the current message again before its
   * completion is written (however the turn ends), so that completion is
   * the reply's, never a thought's.
   */
  finish(): string[] {
    return this.toReply()
  }

  private toReply(): string[] {
    const out = this.closeThoughts()
    if (this.replyIsCurrent) return out
    const last = this.steps_.at(-1)
    this.replyNow = {
      ...this.options.reply,
      createTime: this.later(),
      parentId: last?.id ?? this.options.reply.parentId,
    }
    this.replyIsCurrent = true
    return [...out, frameOf(this.addItem(assistantStartMessage(this.replyNow)))]
  }

  private closeThoughts(): string[] {
    if (!this.openThoughts) return []
    const thoughts = this.openThoughts
    this.openThoughts = undefined
    thoughts.status = 'finished_successfully'
    thoughts.endTurn = false
    for (const thought of thoughts.content.thoughts as { finished: boolean }[])
      thought.finished = true
    return [frameOf(stepCompletionItem())]
  }

  private add(message: unknown): StreamItem {
    this.replyIsCurrent = false
    return this.addItem(message)
  }

  private addItem(message: unknown): StreamItem {
    this.c++
    return messageAddItem(message, this.options.conversationId, this.c)
  }

  private nextBase(): StepMessageBase {
    const previous = this.steps_.at(-1)
    return {
      id: this.options.newId(),
      createTime: this.later(),
      modelSlug: this.options.reply.modelSlug,
      // The first step follows what the reply answers; each next one the step before.
      parentId: previous?.id ?? this.options.reply.parentId,
    }
  }

  private record(
    base: StepMessageBase,
    fields: Omit<StepRecord, 'id' | 'createTime' | 'parentId'>,
  ) {
    const step: StepRecord = {
      id: base.id,
      createTime: base.createTime,
      parentId: base.parentId,
      ...fields,
    }
    this.steps_.push(step)
    return step
  }

  /**
   * Now, but later than the last time handed out once both are stored to the
   * millisecond (turnStepTime's rule), so each step's child is later than it.
   */
  private later(): number {
    this.lastTime = Math.max(this.options.now(), turnStepTime(this.lastTime, 1))
    return this.lastTime
  }
}
