// The one selector of the example variants (APP_VARIANT, CONTRACT §7): each
// variant is a small plugin of its own; a variant's process serves only it.
import type { Config, Variant } from '../../src/config.ts'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db } from '../../src/storage/db.ts'
import { basicVariant } from './basic.ts'
import { configurationVariant } from './configuration.ts'
import { counterVariant } from './counter.ts'
import { dependencyCheckVariant } from './dependency-check.ts'
import { instanceVariant } from './instance.ts'

export type ExampleVariant = Exclude<Variant, 'full'>

export interface VariantDeps {
  config: Config
  /** Needed by `dependency-check`. */
  db?: Db
  /** Needed by `dependency-check`. */
  cache?: Cache
  /** Needed by `counter`: the state store, not the cache. */
  counters?: Cache
}

function need<T>(value: T | undefined, what: string, variant: ExampleVariant): T {
  if (value === undefined) throw new Error(`APP_VARIANT=${variant} needs ${what}`)
  return value
}

export function variantPlugin(variant: ExampleVariant, deps: VariantDeps) {
  switch (variant) {
    case 'basic':
      return basicVariant({ config: deps.config })
    case 'counter':
      return counterVariant({ counters: need(deps.counters, 'a counter store', variant) })
    case 'configuration':
      return configurationVariant({ config: deps.config })
    case 'instance':
      return instanceVariant()
    case 'dependency-check':
      return dependencyCheckVariant({
        db: need(deps.db, 'a database', variant),
        cache: need(deps.cache, 'a cache', variant),
      })
    default: {
      // loadConfig() already refuses unknown names; this keeps the switch exhaustive.
      const unknown: never = variant
      throw new Error(`Unknown APP_VARIANT "${String(unknown)}"`)
    }
  }
}
