// The one reader of `--name=N` whole-number flags and `--name=choice` flags
// for the small bench tools (turn-cost, turn-log-cost, hit-cost); the harness
// (harness/options.ts) parses its richer set itself.

/** `--name=N` from argv, else `fallback`; throws unless it is a whole number from min to max. */
export function wholeNumberFlag(
  name: string,
  fallback: number,
  { min, max }: { min: number; max: number },
  argv: readonly string[] = process.argv,
): number {
  const raw = argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3)
  const value = raw === undefined ? fallback : Number(raw)
  if (!Number.isInteger(value) || value < min || value > max)
    throw new Error(`--${name} must be a whole number from ${min} to ${max}`)
  return value
}

/** `--name=choice` from argv, else the first choice; throws on any other value. */
export function choiceFlag<const T extends string>(
  name: string,
  choices: readonly [T, ...T[]],
  argv: readonly string[] = process.argv,
): T {
  const raw = argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3)
  if (raw === undefined) return choices[0]
  const choice = choices.find((candidate) => candidate === raw)
  if (choice === undefined) throw new Error(`--${name} must be one of ${choices.join(', ')}`)
  return choice
}
