// When the cache and the state count as one Redis (redis-connections.ts
// sameRedisDeployment), so that dependencies.ts links their breakers: the
// same server whatever the database, user or scheme; one Sentinel-managed
// primary seen through a common Sentinel; one Cluster seen through a common
// node. Anything else stays apart, and so does a store without Redis.
import { expect, test } from 'bun:test'
import { type RedisDeployment, sameRedisDeployment } from '../../src/storage/redis-connections.ts'

const server = (url: string): RedisDeployment => ({ kind: 'server', url })
const node = (host: string, port: number) => ({ host, port })

test('one server, whatever the database, user or scheme; another host or port is another', () => {
  const cache = server('redis://127.0.0.1:6379')
  expect(sameRedisDeployment(cache, cache)).toBe(true)
  expect(sameRedisDeployment(cache, server('redis://127.0.0.1:6379/1'))).toBe(true)
  expect(sameRedisDeployment(cache, server('redis://127.0.0.1'))).toBe(true)
  expect(
    sameRedisDeployment(
      server('redis://u:p@Redis.Local:7000/2'),
      server('rediss://redis.local:7000'),
    ),
  ).toBe(true)
  expect(sameRedisDeployment(cache, server('redis://127.0.0.1:6380'))).toBe(false)
  expect(sameRedisDeployment(cache, server('redis://10.0.0.2:6379'))).toBe(false)
})

test('Sentinel: the same primary through a common Sentinel; Cluster: a common node', () => {
  const sentinel = (name: string, ...ports: number[]): RedisDeployment => ({
    kind: 'sentinel',
    name,
    sentinels: ports.map((port) => node('10.0.0.1', port)),
  })
  expect(sameRedisDeployment(sentinel('main', 26379, 26380), sentinel('main', 26380))).toBe(true)
  expect(sameRedisDeployment(sentinel('main', 26379), sentinel('other', 26379))).toBe(false)
  expect(sameRedisDeployment(sentinel('main', 26379), sentinel('main', 26381))).toBe(false)
  const cluster = (...ports: number[]): RedisDeployment => ({
    kind: 'cluster',
    nodes: ports.map((port) => node('10.0.0.1', port)),
  })
  expect(sameRedisDeployment(cluster(7000, 7001), cluster(7001, 7002))).toBe(true)
  expect(sameRedisDeployment(cluster(7000), cluster(7003))).toBe(false)
  expect(sameRedisDeployment(cluster(6379), server('redis://10.0.0.1:6379'))).toBe(false)
})

test('a store without Redis shares nothing', () => {
  expect(sameRedisDeployment(undefined, undefined)).toBe(false)
  expect(sameRedisDeployment(server('redis://127.0.0.1:6379'), undefined)).toBe(false)
})
