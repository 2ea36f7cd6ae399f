// The playground's model picker (CONTRACT §15): the models of GET
// /backend-api/models in a <select>, the default selected for a new
// conversation and the open conversation's model for one it opens. A send
// and a regenerate name the model selected.

/**
 * @param {HTMLSelectElement} select
 * @param {(method: string, path: string) => Promise<any>} callJson
 */
export function modelPicker(select, callJson) {
  let defaultSlug = ''
  // The label around the select goes with it.
  const box = select.closest('label') ?? select
  const setShown = (shown) => {
    box.hidden = !shown
    select.hidden = !shown
  }
  return {
    /** Lists the models; the picker stays hidden when the server lists none. */
    async load() {
      try {
        const list = await callJson('GET', '/backend-api/models')
        const models = Array.isArray(list.models) ? list.models : []
        defaultSlug = list.default_model_slug ?? list.categories?.at(-1)?.default_model ?? ''
        select.replaceChildren(
          ...models.map((model) => {
            const option = document.createElement('option')
            option.value = model.slug
            option.textContent = model.title || model.slug
            return option
          }),
        )
        setShown(models.length > 0)
        this.show(undefined)
      } catch {
        setShown(false)
      }
    },
    /** Selects the model with this slug when it is listed, else the default. */
    show(slug) {
      const listed = [...select.options].some((option) => option.value === slug)
      select.value = listed ? slug : defaultSlug
    },
    /** The slug a send names, or undefined to let the server choose. */
    selected: () => (select.hidden || select.value === '' ? undefined : select.value),
  }
}
