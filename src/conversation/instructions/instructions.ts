// Custom instructions (CONTRACT §16, chatgpt.com's user_system_messages): what
// a user says about themselves and how the model should answer, whether they
// apply, and the fields of newer clients (kept and returned as sent). Pure:
// checking a change, applying it, the wire object, and the system text a
// model receives. Storage is repository.ts, caching store.ts.
import { invalid } from '../../errors.ts'

/** The longest text of each field, in characters (chatgpt.com's limit). */
export const MAX_INSTRUCTION_CHARS = 1_500
/** Fields of newer clients one user may keep. */
export const MAX_OTHER_FIELDS = 32
/** The longest JSON of one such field that is not a text. */
export const MAX_OTHER_FIELD_JSON = 4_000

export interface CustomInstructions {
  enabled: boolean
  aboutUser: string
  aboutModel: string
  /** Fields this service does not read (`name_user_message`, `disabled_tools`, …), as sent. */
  otherFields: Record<string, unknown>
}

export const NO_INSTRUCTIONS: CustomInstructions = {
  enabled: false,
  aboutUser: '',
  aboutModel: '',
  otherFields: {},
}

/** A POST's change: the fields it sets; absent ones keep their stored value. */
export interface InstructionsChange {
  enabled?: boolean
  aboutUser?: string
  aboutModel?: string
  otherFields: Record<string, unknown>
}

/** Body fields that are not instructions: the wire object's tag and the development identity. */
const NOT_KEPT = new Set(['object', 'user_id'])
const KNOWN = new Set(['enabled', 'about_user_message', 'about_model_message'])
/** chatgpt.com's field names: lower-case words; nothing that could reach an object's prototype. */
const FIELD_NAME = /^[a-z][a-z0-9_]{0,63}$/

const chars = (text: string) => {
  let count = 0
  for (const _ of text) count++
  return count
}

function text(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name]
  if (value === undefined) return undefined
  if (value === null) return ''
  if (typeof value !== 'string') throw invalid(`The field "${name}" must be a text.`)
  if (chars(value) > MAX_INSTRUCTION_CHARS)
    throw invalid(`The field "${name}" must be at most ${MAX_INSTRUCTION_CHARS} characters.`)
  return value
}

/** One field of a newer client, checked like the texts (they are texts on chatgpt.com) and bounded. */
function otherField(name: string, value: unknown): unknown {
  if (!FIELD_NAME.test(name))
    throw invalid(
      `The field "${name.slice(0, 64)}" is not a field name this service keeps (lower-case letters, digits and _).`,
    )
  if (typeof value === 'string') {
    if (chars(value) > MAX_INSTRUCTION_CHARS)
      throw invalid(`The field "${name}" must be at most ${MAX_INSTRUCTION_CHARS} characters.`)
    return value
  }
  if (JSON.stringify(value).length > MAX_OTHER_FIELD_JSON)
    throw invalid(`The field "${name}" must be at most ${MAX_OTHER_FIELD_JSON} characters of JSON.`)
  return value
}

/** Reads a POST body into a change; 422 naming the first bad field. */
export function changeOf(body: Record<string, unknown>): InstructionsChange {
  const aboutUser = text(body, 'about_user_message')
  const aboutModel = text(body, 'about_model_message')
  const { enabled } = body
  if (enabled !== undefined && typeof enabled !== 'boolean')
    throw invalid('The field "enabled" must be true or false.')
  const otherFields: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(body)) {
    if (KNOWN.has(name) || NOT_KEPT.has(name)) continue
    // otherField refuses names like `__proto__` before they are used as keys.
    otherFields[name] = otherField(name, value)
  }
  if (Object.keys(otherFields).length > MAX_OTHER_FIELDS)
    throw invalid(`The body holds more than ${MAX_OTHER_FIELDS} fields besides the instructions.`)
  return {
    ...(enabled === undefined ? {} : { enabled }),
    ...optional('aboutUser', aboutUser),
    ...optional('aboutModel', aboutModel),
    otherFields,
  }
}

const optional = <K extends string>(key: K, value: string | undefined) =>
  (value === undefined ? {} : { [key]: value }) as { [P in K]?: string }

/** The stored instructions with a change applied; 422 when it leaves too many other fields. */
export function applyChange(
  stored: CustomInstructions,
  change: InstructionsChange,
): CustomInstructions {
  const otherFields = { ...stored.otherFields, ...change.otherFields }
  if (Object.keys(otherFields).length > MAX_OTHER_FIELDS)
    throw invalid(
      `At most ${MAX_OTHER_FIELDS} fields besides the instructions are kept per user; this would keep more.`,
    )
  return {
    enabled: change.enabled ?? stored.enabled,
    aboutUser: change.aboutUser ?? stored.aboutUser,
    aboutModel: change.aboutModel ?? stored.aboutModel,
    otherFields,
  }
}

/** The wire object of GET and POST, chatgpt.com's `user_system_message_detail`. */
export interface InstructionsDetail extends Record<string, unknown> {
  object: 'user_system_message_detail'
  enabled: boolean
  about_user_message: string
  about_model_message: string
}

export function detailOf(instructions: CustomInstructions): InstructionsDetail {
  // Other fields never hold these names (changeOf), so they come after them unharmed.
  return {
    object: 'user_system_message_detail',
    enabled: instructions.enabled,
    about_user_message: instructions.aboutUser,
    about_model_message: instructions.aboutModel,
    ...instructions.otherFields,
  }
}

/** What the model is told of the user's instructions; undefined when they do not apply or say nothing. */
export function instructionsText(instructions: CustomInstructions): string | undefined {
  if (!instructions.enabled) return undefined
  const sections: string[] = []
  const aboutUser = instructions.aboutUser.trim()
  const aboutModel = instructions.aboutModel.trim()
  if (aboutUser !== '') sections.push(`What the user says about themselves:\n${aboutUser}`)
  if (aboutModel !== '') sections.push(`How the user wants you to respond:\n${aboutModel}`)
  return sections.length === 0 ? undefined : sections.join('\n\n')
}

/** What the model is told of enabled instructions read beside a turn (sql/user-instructions.ts). */
export const enabledInstructionsText = (
  instructions: { aboutUser: string; aboutModel: string } | null,
): string | undefined =>
  instructions === null
    ? undefined
    : instructionsText({ enabled: true, ...instructions, otherFields: {} })

/** The system message of a context: the model's own prompt first, then the user's instructions. */
export function systemText(
  modelPrompt: string | undefined,
  userInstructions: string | undefined,
): string | undefined {
  const parts = [modelPrompt, userInstructions].filter(
    (part): part is string => part !== undefined && part.trim() !== '',
  )
  return parts.length === 0 ? undefined : parts.join('\n\n')
}
