// The harness's targets table (bench/harness/report.ts): a verdict per target,
// and when one is missed, where its account is kept - a section that must
// exist in docs/benchmarks.md for the pointer to hold.
import { expect, test } from 'bun:test'
import { resolve } from 'node:path'
import { MISSED_TARGETS_ACCOUNT, targetTable } from '../../bench/harness/report.ts'

const met = { target: 'a target', measured: '1×', met: true }
const missed = { target: 'another', measured: '3×', met: false }
const unmeasured = { target: 'a third', measured: 'n/a', met: undefined }

test('a missed target points to its account; met and unmeasured ones do not', () => {
  const withMissed = targetTable([met, missed, unmeasured])
  expect(withMissed).toContain('| another | 3× | **missed** |')
  expect(withMissed).toContain('| a target | 1× | met |')
  expect(withMissed).toContain('| a third | n/a | n/a |')
  expect(withMissed.at(-1)).toBe(MISSED_TARGETS_ACCOUNT)
  expect(targetTable([met, unmeasured])).not.toContain(MISSED_TARGETS_ACCOUNT)
})

test('the section the pointer names exists', async () => {
  const doc = await Bun.file(resolve(import.meta.dir, '../../docs/benchmarks.md')).text()
  expect(MISSED_TARGETS_ACCOUNT).toContain('docs/benchmarks.md, "Latest figures"')
  expect(doc).toContain('\n## Latest figures\n')
})
