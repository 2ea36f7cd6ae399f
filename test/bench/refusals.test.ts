// The bench harness's count of refused sends (bench/harness/refusals.ts): a
// scale report tells `overloaded` (shed) from `state_unavailable` (the turn
// state taken for dead) by the answer's body, whatever else comes back; and
// --cpu-hog is a scale-only option.
import { expect, test } from 'bun:test'
import { parseOptions } from '../../bench/harness/options.ts'
import {
  countRefusals,
  describeRefusals,
  describeRefusalsWithReasons,
  overloadReasonsOf,
  refusalOf,
} from '../../bench/harness/refusals.ts'

test('refusals are named by code, the turn state by its 503 detail', () => {
  expect(refusalOf(503, '{"detail":"The server is too busy.","code":"overloaded"}')).toBe(
    'overloaded',
  )
  expect(
    refusalOf(
      503,
      '{"detail":"The turn state store is unavailable; try again shortly.","code":"service_unavailable"}',
    ),
  ).toBe('state_unavailable')
  expect(
    refusalOf(503, '{"detail":"The database is unavailable.","code":"service_unavailable"}'),
  ).toBe('503 service_unavailable')
  expect(refusalOf(429, '{"detail":"Slow down.","code":"rate_limited"}')).toBe('429 rate_limited')
  // Not JSON, or JSON of another shape: counted, not thrown on.
  expect(refusalOf(502, '<html>Bad Gateway</html>')).toBe('502 without a JSON body')
  expect(refusalOf(503, '[1,2]')).toBe('503 without a JSON body')
  expect(refusalOf(503, '{"code":7}')).toBe('503 without a JSON body')
})

test('counts by kind, and the two codes are always named', () => {
  const counts = countRefusals([
    { refusal: 'overloaded' },
    {},
    { refusal: 'overloaded' },
    { refusal: '429 rate_limited' },
  ])
  expect(counts).toEqual({ overloaded: 2, '429 rate_limited': 1 })
  expect(describeRefusals(counts)).toBe('overloaded 2, state_unavailable 0, 429 rate_limited 1')
  expect(describeRefusals({})).toBe('overloaded 0, state_unavailable 0')
})

test('--cpu-hog goes with --scale only', () => {
  expect(parseOptions(['--scale', '--cpu-hog']).cpuHog).toBe(true)
  expect(parseOptions(['--scale']).cpuHog).toBe(false)
  expect(() => parseOptions(['--cpu-hog'])).toThrow('--cpu-hog needs --scale')
  expect(() => parseOptions(['--short', '--cpu-hog'])).toThrow()
})

test("the servers' own reasons for overloaded, summed over their /metrics", () => {
  const one = [
    '# HELP conduit_overloaded_total Requests refused with 503 overloaded, by reason.',
    '# TYPE conduit_overloaded_total counter',
    'conduit_overloaded_total{reason="event_loop_lag"} 10',
    'conduit_overloaded_total{reason="database_deadline"} 2',
    'conduit_turns_started_total 40',
  ].join('\n')
  const two = 'conduit_overloaded_total{reason="database_deadline"} 5\n'
  const reasons = overloadReasonsOf([one, two, '', 'not metrics at all'])
  expect(reasons).toEqual({ event_loop_lag: 10, database_deadline: 7 })
  expect(describeRefusalsWithReasons({ overloaded: 17 }, reasons)).toBe(
    'overloaded 17 (the servers counted: event_loop_lag 10, database_deadline 7), state_unavailable 0',
  )
  expect(describeRefusalsWithReasons({ overloaded: 3 }, {})).toBe(
    'overloaded 3, state_unavailable 0',
  )
})
