// Finds or creates the actor of a conversation. Idle actors are dropped after
// a while, and the number kept is capped: at the cap the least recently used
// idle actor makes room, and when every actor is busy the send is refused (429).
import { tooManyRequests } from '../errors.ts'
import { ConversationActor } from './actor.ts'

export interface RegistryOptions {
  idleMs: number
  maxActors: number
  now?: () => number
}

export class ActorRegistry {
  /** Insertion order is recency: get() moves an actor to the end. */
  private readonly actors = new Map<string, ConversationActor>()
  private readonly sweeper: ReturnType<typeof setInterval>
  private readonly now: () => number

  constructor(private readonly options: RegistryOptions) {
    this.now = options.now ?? Date.now
    this.sweeper = setInterval(() => this.passivateIdle(), Math.max(1_000, options.idleMs / 2))
    this.sweeper.unref?.()
  }

  get size(): number {
    return this.actors.size
  }

  get(conversationId: string): ConversationActor {
    let actor = this.actors.get(conversationId)
    if (actor) this.actors.delete(conversationId)
    else {
      if (this.actors.size >= this.options.maxActors) this.evictOneIdle()
      actor = new ConversationActor(conversationId, this.now)
    }
    this.actors.set(conversationId, actor)
    return actor
  }

  /** Drops actors with nothing queued that were last active idleMs ago or more. */
  passivateIdle(): void {
    const cutoff = this.now() - this.options.idleMs
    for (const [id, actor] of this.actors)
      if (actor.queued === 0 && actor.lastActiveAt <= cutoff) this.actors.delete(id)
  }

  /** Resolves when every actor has finished what it was given. */
  async whenIdle(): Promise<void> {
    await Promise.all([...this.actors.values()].map((actor) => actor.whenIdle()))
  }

  close(): void {
    clearInterval(this.sweeper)
  }

  private evictOneIdle(): void {
    for (const [id, actor] of this.actors)
      if (actor.queued === 0) {
        this.actors.delete(id)
        return
      }
    throw tooManyRequests('The server is busy with too many conversations; try again shortly.')
  }
}
