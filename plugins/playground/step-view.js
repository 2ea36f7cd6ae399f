// A reply's steps on the page (CONTRACT §21): each thoughts message a
// collapsed "Thinking" block (its text as sanitised Markdown: markdown.js),
// each tool call with its arguments and its result one collapsed "Called
// <tool>" block (both as plain text, never parsed as HTML), a failed call
// marked. The blocks are updated in place while a reply streams, so one a
// person opened stays open.
import { renderMarkdown } from './markdown.js'
import { stepBlocks } from './steps.js'

/**
 * Shows the blocks of `steps` in `container` (a `.steps` element), reusing
 * the blocks already there.
 * @param {HTMLElement} container
 * @param {object[]} steps
 */
export function renderSteps(container, steps) {
  const blocks = stepBlocks(steps)
  blocks.forEach((block, index) => {
    let details = container.children[index]
    if (!details || details.dataset.kind !== block.kind) {
      details = newDetails(block.kind)
      if (container.children[index]) container.children[index].replaceWith(details)
      else container.append(details)
    }
    if (block.kind === 'thinking') showThinking(details, block)
    else showTool(details, block)
  })
  while (container.children.length > blocks.length) container.lastElementChild?.remove()
  container.hidden = blocks.length === 0
}

function newDetails(kind) {
  const details = document.createElement('details')
  details.className = `step ${kind}`
  details.dataset.kind = kind
  details.append(document.createElement('summary'))
  const body = document.createElement('div')
  body.className = 'step-body'
  details.append(body)
  return details
}

function showThinking(details, block) {
  details.dataset.id = block.id
  details.querySelector('summary').textContent = block.done ? 'Thinking' : 'Thinking…'
  const body = details.querySelector('.step-body')
  if (body.dataset.text === block.text) return
  body.dataset.text = block.text
  body.classList.add('markdown')
  renderMarkdown(body, block.text)
}

function showTool(details, block) {
  details.dataset.id = block.id
  const pending = block.result === undefined
  details.classList.toggle('error', block.isError)
  details.querySelector('summary').textContent = pending
    ? `Calling ${block.tool}…`
    : `Called ${block.tool}${block.isError ? ' (failed)' : ''}`
  const body = details.querySelector('.step-body')
  const sections = [['Arguments', 'step-args', block.args]]
  if (!pending) sections.push([block.isError ? 'Error' : 'Result', 'step-result', block.result])
  body.replaceChildren(
    ...sections.map(([label, className, text]) => section(label, className, text)),
  )
}

/** A labelled block of plain text: what a model or a tool wrote is never parsed as HTML. */
function section(label, className, text) {
  const box = document.createElement('div')
  box.className = className
  const heading = document.createElement('div')
  heading.className = 'step-label'
  heading.textContent = label
  const pre = document.createElement('pre')
  pre.className = 'step-text'
  pre.textContent = text
  box.append(heading, pre)
  return box
}
