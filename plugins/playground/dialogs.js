// The playground's in-page dialogs (<dialog>, never window.prompt or
// confirm): one asks for a text (a multi-line edit of a message, a one-line
// title), one asks to confirm. Each answers a promise: the text, or true,
// when saved; undefined (or false) when cancelled or closed with Escape.

/**
 * Shows `dialog` (a form with a `[name=text]` field, a `.heading`, and Cancel
 * and Save buttons) filled with `value`; resolves to the text saved, as typed
 * (a message keeps its spaces and lines), or undefined.
 * @param {HTMLDialogElement} dialog
 * @param {{ heading: string, value: string }} options
 * @returns {Promise<string | undefined>}
 */
export function askText(dialog, { heading, value }) {
  const field = dialog.querySelector('[name="text"]')
  dialog.querySelector('.heading').textContent = heading
  field.value = value
  return answer(dialog, () => (field.value.trim() === '' ? undefined : field.value), field)
}

/**
 * Asks `question` in `dialog` (a form with a `.heading` and Cancel and
 * confirm buttons); resolves to whether it was confirmed.
 * @param {HTMLDialogElement} dialog
 * @param {string} question
 * @returns {Promise<boolean>}
 */
export async function confirmIn(dialog, question) {
  dialog.querySelector('.heading').textContent = question
  return (await answer(dialog, () => true)) === true
}

function answer(dialog, value, focus) {
  const form = dialog.querySelector('form')
  const cancel = dialog.querySelector('.cancel')
  return new Promise((resolve) => {
    let result
    const onSubmit = (event) => {
      event.preventDefault()
      result = value()
      // An empty text is not an answer: the dialog stays open.
      if (result !== undefined) dialog.close()
    }
    const onCancel = () => dialog.close()
    const onClose = () => {
      form.removeEventListener('submit', onSubmit)
      cancel.removeEventListener('click', onCancel)
      resolve(result)
    }
    form.addEventListener('submit', onSubmit)
    cancel.addEventListener('click', onCancel)
    dialog.addEventListener('close', onClose, { once: true })
    dialog.showModal()
    if (focus) {
      focus.focus()
      focus.setSelectionRange?.(focus.value.length, focus.value.length)
    }
  })
}
