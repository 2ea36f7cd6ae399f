// The playground's custom-instructions dialog (CONTRACT §16): reads the
// user's instructions from GET /backend-api/user_system_messages, and saves
// them with POST; the server's answer (or its 422) is shown as it says it.

const PATH = '/backend-api/user_system_messages'

/**
 * @param {{ open: HTMLButtonElement, dialog: HTMLDialogElement, form: HTMLFormElement,
 *   enabled: HTMLInputElement, aboutUser: HTMLTextAreaElement, aboutModel: HTMLTextAreaElement,
 *   message: HTMLElement, cancel: HTMLButtonElement }} el
 * @param {(method: string, path: string, body?: unknown) => Promise<any>} callJson
 * @param {() => boolean} hasIdentity
 * @param {(text: string, isError?: boolean) => void} say
 */
export function instructionsDialog(el, callJson, hasIdentity, say) {
  const counters = new Map()
  for (const area of [el.aboutUser, el.aboutModel]) {
    const counter = area.parentElement?.querySelector('.count')
    counters.set(area, counter)
    area.addEventListener('input', () => count(area))
  }
  function count(area) {
    const counter = counters.get(area)
    if (counter) counter.textContent = `${[...area.value].length} / ${area.maxLength}`
  }

  function fill(detail) {
    el.enabled.checked = detail.enabled === true
    el.aboutUser.value = detail.about_user_message ?? ''
    el.aboutModel.value = detail.about_model_message ?? ''
    count(el.aboutUser)
    count(el.aboutModel)
  }

  async function open() {
    if (!hasIdentity()) {
      say('Choose a user (or paste a JWT) first.', true)
      return
    }
    el.message.textContent = ''
    try {
      fill(await callJson('GET', PATH))
      el.dialog.showModal()
    } catch (error) {
      say(error instanceof Error ? error.message : String(error), true)
    }
  }

  async function save(event) {
    event.preventDefault()
    try {
      fill(
        await callJson('POST', PATH, {
          enabled: el.enabled.checked,
          about_user_message: el.aboutUser.value,
          about_model_message: el.aboutModel.value,
        }),
      )
      el.dialog.close()
      say(
        el.enabled.checked
          ? 'Custom instructions saved and on.'
          : 'Custom instructions saved (off).',
      )
    } catch (error) {
      el.message.textContent = error instanceof Error ? error.message : String(error)
    }
  }

  el.open.addEventListener('click', () => void open())
  el.form.addEventListener('submit', (event) => void save(event))
  el.cancel.addEventListener('click', () => el.dialog.close())
}
