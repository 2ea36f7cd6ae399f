// Private Redis deployments for tests, started by the tests themselves on free
// loopback ports in temporary directories and killed by pid afterwards: a
// Redis Cluster of `redis-server --cluster-enabled yes` processes (joined with
// `redis-cli --cluster create`, with replicas when asked), and a primary with
// a replica watched by three Sentinels (`redis-sentinel`, or
// `redis-server --sentinel` where that is missing). A killed node can come
// back on its port, empty, as a replica: a Cluster node rejoins under the
// master that took its slots, a Sentinel data node under the new primary.
// Only where redis-server and redis-cli are installed
// (REDIS_DEPLOYMENTS_MISSING says what is not).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import Redis from 'ioredis'
import { type HostPort, redisConnector } from '../../src/storage/redis-connections.ts'
import { freePort, sleep } from './server-process.ts'
import type { TestTls } from './test-tls.ts'

const REDIS_SERVER = Bun.which('redis-server')
const REDIS_CLI = Bun.which('redis-cli')
const REDIS_SENTINEL = Bun.which('redis-sentinel')

/** Why the private deployments cannot run here, or undefined when they can. */
export const REDIS_DEPLOYMENTS_MISSING = !REDIS_SERVER
  ? 'redis-server is not installed'
  : !REDIS_CLI
    ? 'redis-cli is not installed'
    : undefined

/** One redis-server process of a deployment. */
export interface RedisNode extends HostPort {
  /** A client of its own, for looking at it (not a cluster client). */
  admin: Redis
  /** SIGKILL: no shutdown, connections cut. */
  kill(): Promise<void>
  /** SIGSTOP / SIGCONT. */
  freeze(): void
  thaw(): void
  /**
   * Starts a killed node again on its port, in its directory (a Cluster node
   * keeps its identity: nodes-*.conf), empty; as a replica of `replicaOf`
   * when given (instead of any it was started as), with `args` besides.
   * Resolves once it answers.
   */
  restart(replicaOf?: HostPort, args?: string[]): Promise<void>
  readonly alive: boolean
  /** Kills it if alive (thawed first) and closes its admin client. */
  stop(): Promise<void>
}

const processes: Subprocess[] = []
const dirs: string[] = []
const admins: Redis[] = []

/** Polls until check() holds, every 50 ms; throws `what` after ms. */
export async function until(check: () => Promise<boolean>, what: string, ms = 20_000) {
  const deadline = Date.now() + ms
  for (;;) {
    if (await check().catch(() => false)) return
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`)
    await sleep(50)
  }
}

/**
 * How a private deployment's data nodes are secured (none: plain, no AUTH):
 * a password every client and replica gives, and TLS with test-tls.ts's
 * files, on which a node listens instead of plain TCP.
 */
export interface NodeSecurity {
  password?: string
  tls?: TestTls
}

/** The arguments that make a data node ask for the password and speak TLS only. */
function securityArgs(security: NodeSecurity | undefined, port: number): string[] {
  const { password, tls } = security ?? {}
  return [
    ...(password ? ['--requirepass', password, '--masterauth', password] : []),
    ...(tls
      ? [
          '--port',
          '0',
          '--tls-port',
          String(port),
          '--tls-cert-file',
          tls.certFile,
          '--tls-key-file',
          tls.keyFile,
          '--tls-ca-cert-file',
          tls.caFile,
          '--tls-auth-clients',
          'no',
          '--tls-replication',
          'yes',
          '--tls-cluster',
          'yes',
        ]
      : ['--port', String(port)]),
  ]
}

/** Environment and flags that let redis-cli reach a secured node. */
function cliSecurity(security: NodeSecurity | undefined) {
  return {
    env: security?.password ? { REDISCLI_AUTH: security.password } : {},
    args: security?.tls ? ['--tls', '--cacert', security.tls.caFile] : [],
  }
}

function startNode(
  args: string[],
  dir: string,
  binary = REDIS_SERVER ?? '',
  security?: NodeSecurity,
  /** A Sentinel's own password (it takes no --masterauth, nor TLS here). */
  adminPassword = security?.password,
): RedisNode {
  const port = freePort()
  const spawn = (nodeArgs: string[]) => {
    const started = Bun.spawn(
      [
        binary,
        ...nodeArgs,
        ...(binary === REDIS_SENTINEL || nodeArgs.includes('--sentinel')
          ? ['--port', String(port)]
          : securityArgs(security, port)),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
      ],
      { stdout: 'ignore', stderr: 'ignore' },
    )
    processes.push(started)
    return started
  }
  let proc = spawn(args)
  const admin = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    retryStrategy: () => 50,
    ...(adminPassword ? { password: adminPassword } : {}),
    ...(security?.tls && binary !== REDIS_SENTINEL && !args.includes('--sentinel')
      ? { tls: { ca: security.tls.caPem } }
      : {}),
  })
  admin.on('error', () => {})
  admins.push(admin)
  let alive = true
  const node: RedisNode = {
    host: '127.0.0.1',
    port,
    admin,
    get alive() {
      return alive
    },
    async kill() {
      alive = false
      proc.kill('SIGKILL')
      await proc.exited
    },
    freeze: () => proc.kill('SIGSTOP'),
    thaw: () => proc.kill('SIGCONT'),
    async restart(replicaOf, more = []) {
      if (alive) throw new Error(`redis on ${port} is still running`)
      const at = args.indexOf('--replicaof')
      const own = at < 0 ? args : [...args.slice(0, at), ...args.slice(at + 3)]
      proc = spawn([
        ...own,
        ...(replicaOf ? ['--replicaof', replicaOf.host, String(replicaOf.port)] : []),
        ...more,
      ])
      alive = true
      await answers(node)
    },
    async stop() {
      admin.disconnect()
      alive = false
      if (proc.exitCode !== null || proc.signalCode !== null) return
      proc.kill('SIGCONT')
      proc.kill('SIGKILL')
      await proc.exited
    },
  }
  return node
}

async function answers(node: RedisNode): Promise<void> {
  await until(async () => {
    if (node.admin.status === 'wait') await node.admin.connect()
    return (await node.admin.ping()) === 'PONG'
  }, `redis on ${node.port} answers`)
}

/** Resolves once `node` is a replica in sync with its primary; says its last ROLE reply if not within ms. */
async function replicaInSync(node: RedisNode, ms: number): Promise<void> {
  let role: unknown[] = []
  await until(
    async () => {
      role = await node.admin.role()
      return role[0] === 'slave' && role[3] === 'connected'
    },
    `redis on ${node.port} is a replica in sync`,
    ms,
  ).catch((error: Error) => {
    throw new Error(`${error.message} (its last ROLE reply: ${JSON.stringify(role)})`)
  })
}

function tempDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `conduit-${label}-`))
  dirs.push(dir)
  return dir
}

export interface PrivateCluster {
  nodes: RedisNode[]
  /** host:port of every node, for REDIS_CLUSTER_NODES. */
  readonly spec: string
  /** The masters now (as the live nodes see it). */
  masters(): Promise<RedisNode[]>
  /** Resolves once every live node sees all 16384 slots served and the cluster ok. */
  healthy(ms?: number): Promise<void>
  /** The master serving a slot now. */
  masterOf(slot: number): Promise<RedisNode>
  /**
   * Restarts a killed node; it comes back as a replica of the master that
   * took its slots over. Resolves once it is in sync and the cluster healthy.
   */
  rejoin(node: RedisNode, ms?: number): Promise<void>
  /** Each live node's port and role, and the cluster as the first of them sees it: for failure messages. */
  view(): Promise<string>
  /** Kills every node. */
  stop(): Promise<void>
}

/** A Cluster of `masters` masters with `replicas` replicas each, joined and healthy. */
export async function startCluster(
  masters = 3,
  replicas = 0,
  security?: NodeSecurity,
): Promise<PrivateCluster> {
  const count = masters * (replicas + 1)
  const nodes = Array.from({ length: count }, (_, i) =>
    startNode(
      [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${i}.conf`,
        // A dead master is failed over after about this (the tests wait for it).
        '--cluster-node-timeout',
        '1000',
      ],
      tempDir('cluster'),
      REDIS_SERVER ?? '',
      security,
    ),
  )
  await Promise.all(nodes.map(answers))
  const cli = cliSecurity(security)
  const create = Bun.spawn(
    [
      REDIS_CLI ?? '',
      ...cli.args,
      '--cluster',
      'create',
      ...nodes.map((node) => `127.0.0.1:${node.port}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ],
    { stdout: 'pipe', stderr: 'pipe', env: { ...process.env, ...cli.env } },
  )
  const output = await new Response(create.stdout).text()
  if ((await create.exited) !== 0) throw new Error(`redis-cli --cluster create failed: ${output}`)
  const cluster: PrivateCluster = {
    nodes,
    spec: nodes.map((node) => `127.0.0.1:${node.port}`).join(','),
    async masterOf(slot) {
      const live = nodes.find((node) => node.alive)
      const ranges = (await live?.admin.cluster('SLOTS')) ?? []
      const range = ranges.find(([from, to]) => from <= slot && slot <= to)
      const master = nodes.find((node) => node.port === Number(range?.[2]?.[1]))
      if (!master) throw new Error(`no master serves slot ${slot}`)
      return master
    },
    async rejoin(node, ms = 30_000) {
      // Back empty, it must not take its master's slots over before it has
      // their data (as with Sentinel: startSentinels' rejoin): it may fail
      // over again only once in sync.
      await node.restart(undefined, ['--cluster-replica-no-failover', 'yes'])
      await replicaInSync(node, ms).catch(async (error: Error) => {
        throw new Error(`${error.message}; ${await cluster.view()}`)
      })
      await node.admin.call('CONFIG', 'SET', 'cluster-replica-no-failover', 'no')
      await cluster.healthy(ms)
    },
    async view() {
      const live = nodes.filter((node) => node.alive)
      const roles = await Promise.all(
        live.map(async (node) => {
          const role = await node.admin.role().then(
            (reply) => String(reply[0]),
            (error: Error) => error.message,
          )
          return `${node.port} ${role}`
        }),
      )
      const seen = await live[0]?.admin.cluster('NODES').catch(String)
      return `roles: ${roles.join(', ')}; CLUSTER NODES on ${live[0]?.port}:\n${seen}`
    },
    async stop() {
      await Promise.all(nodes.map((node) => node.stop()))
    },
    async masters() {
      const live = nodes.filter((node) => node.alive)
      const roles = await Promise.all(live.map((node) => node.admin.role()))
      return live.filter((_, i) => roles[i]?.[0] === 'master')
    },
    async healthy(ms = 20_000) {
      await until(
        async () => {
          const live = nodes.filter((node) => node.alive)
          const infos = await Promise.all(live.map((node) => node.admin.cluster('INFO')))
          return infos.every(
            (info) => info.includes('cluster_state:ok') && info.includes('cluster_slots_ok:16384'),
          )
        },
        'the cluster is ok on every live node',
        ms,
      )
      // Replicas have their master's data before anything is killed.
      await until(
        async () => {
          const live = nodes.filter((node) => node.alive)
          const roles = await Promise.all(live.map((node) => node.admin.role()))
          return roles.every((role) => role[0] !== 'slave' || role[3] === 'connected')
        },
        'every replica is in sync',
        ms,
      )
    },
  }
  await cluster.healthy()
  return cluster
}

export interface PrivateSentinels {
  name: string
  primary: RedisNode
  replica: RedisNode
  sentinels: RedisNode[]
  /** host:port of the Sentinels, for REDIS_SENTINELS. */
  readonly spec: string
  /** The primary's port as the Sentinels report it now. */
  primaryPort(): Promise<number>
  /** The data node (primary or replica) the Sentinels report as primary now. */
  primaryNow(): Promise<RedisNode>
  /** The data node every Sentinel names as primary; undefined while they disagree (a failover under way). */
  agreedPrimary(): Promise<RedisNode | undefined>
  /**
   * Restarts a killed data node as a replica of the primary now; resolves
   * once the deployment is whole again: every Sentinel names one primary and
   * sees the other data node up as its replica, in sync. Which node is
   * primary may change meanwhile (Sentinels that still saw the restarted
   * node as their primary may fail over once more): ask primaryNow().
   */
  rejoin(node: RedisNode, ms?: number): Promise<void>
  /** Kills every process. */
  stop(): Promise<void>
}

/**
 * A primary with one replica, watched by three Sentinels that fail over
 * within about 2 s; with a password, the data nodes ask for it, and with
 * `sentinelPassword` the Sentinels ask for theirs.
 */
export async function startSentinels(
  name = 'conduit',
  security: { password?: string; sentinelPassword?: string } = {},
): Promise<PrivateSentinels> {
  const data = security.password ? { password: security.password } : undefined
  const primary = startNode([], tempDir('primary'), REDIS_SERVER ?? '', data)
  await answers(primary)
  const replica = startNode(
    ['--replicaof', '127.0.0.1', String(primary.port)],
    tempDir('replica'),
    REDIS_SERVER ?? '',
    data,
  )
  await answers(replica)
  await until(async () => (await replica.admin.role())[3] === 'connected', 'the replica is in sync')
  const sentinels = Array.from({ length: 3 }, () => {
    const dir = tempDir('sentinel')
    const file = join(dir, 'sentinel.conf')
    writeFileSync(
      file,
      [
        `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
        `sentinel down-after-milliseconds ${name} 1000`,
        `sentinel failover-timeout ${name} 5000`,
        `sentinel parallel-syncs ${name} 1`,
        ...(security.password ? [`sentinel auth-pass ${name} ${security.password}`] : []),
        ...(security.sentinelPassword ? [`requirepass ${security.sentinelPassword}`] : []),
        '',
      ].join('\n'),
    )
    return REDIS_SENTINEL
      ? startNode([file], dir, REDIS_SENTINEL, undefined, security.sentinelPassword)
      : startNode(
          [file, '--sentinel'],
          dir,
          REDIS_SERVER ?? '',
          undefined,
          security.sentinelPassword,
        )
  })
  await Promise.all(sentinels.map(answers))
  // Each Sentinel knows the replica and the other Sentinels before anything fails.
  await until(async () => {
    const views = await Promise.all(
      sentinels.map((sentinel) => sentinel.admin.call('SENTINEL', 'MASTER', name)),
    )
    return views.every((view) => {
      const fields = view as string[]
      const field = (key: string) => Number(fields[fields.indexOf(key) + 1])
      return field('num-slaves') >= 1 && field('num-other-sentinels') >= 2
    })
  }, 'the Sentinels know the replica and each other')
  const watched: PrivateSentinels = {
    name,
    primary,
    replica,
    sentinels,
    spec: sentinels.map((sentinel) => `127.0.0.1:${sentinel.port}`).join(','),
    async stop() {
      await Promise.all([primary, replica, ...sentinels].map((node) => node.stop()))
    },
    async primaryPort() {
      const live = sentinels.find((sentinel) => sentinel.alive) ?? sentinels[0]
      const address = (await live?.admin.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as
        | string[]
        | null
      return Number(address?.[1])
    },
    async primaryNow() {
      const port = await watched.primaryPort()
      const node = [primary, replica].find((data) => data.port === port)
      if (!node) throw new Error(`the Sentinels name ${port}, not a data node of theirs`)
      return node
    },
    async agreedPrimary() {
      const ports = await Promise.all(
        sentinels.map(async (sentinel) => {
          const address = (await sentinel.admin.call(
            'SENTINEL',
            'GET-MASTER-ADDR-BY-NAME',
            name,
          )) as string[] | null
          return Number(address?.[1])
        }),
      )
      if (!ports.every((port) => port === ports[0])) return undefined
      return [primary, replica].find((data) => data.port === ports[0])
    },
    async rejoin(node, ms = 30_000) {
      const now = await watched.primaryNow()
      if (now === node) throw new Error(`redis on ${node.port} is the primary`)
      // Back empty (no persistence), it must not be promoted before it has the
      // primary's data: the full sync's fork on a busy machine once kept the
      // primary from answering past down-after-milliseconds, the Sentinels
      // promoted the empty node, and the primary then synced from it - every
      // key gone. A replica priority of 0 rules it out until it is in sync.
      await node.restart(now, ['--replica-priority', '0'])
      let seen = ''
      await until(
        async () => {
          seen = 'the Sentinels disagree on the primary'
          const agreed = await watched.agreedPrimary()
          const other = agreed === primary ? replica : primary
          if (!agreed) return false
          const roles = await Promise.all([agreed.admin.role(), other.admin.role()])
          seen = `primary ${agreed.port}, ROLE replies ${JSON.stringify(roles)}`
          const [primaryRole, replicaRole] = roles
          if (primaryRole[0] !== 'master' || replicaRole[0] !== 'slave') return false
          if (Number(replicaRole[2]) !== agreed.port || replicaRole[3] !== 'connected') return false
          const views = (await Promise.all(
            sentinels.map((sentinel) => sentinel.admin.call('SENTINEL', 'REPLICAS', name)),
          )) as string[][][]
          seen += `; the Sentinels' replicas ${JSON.stringify(views)}`
          return views.every((replicas) =>
            replicas.some((fields) => {
              const field = (key: string) => fields[fields.indexOf(key) + 1]
              return (
                Number(field('port')) === other.port &&
                field('flags') === 'slave' &&
                field('master-link-status') === 'ok'
              )
            }),
          )
        },
        'a primary and its replica in sync, both up, as every Sentinel sees them',
        ms,
      ).catch((error: Error) => {
        throw new Error(`${error.message} (last seen: ${seen})`)
      })
      // In sync: it may be promoted again, once every Sentinel has seen so.
      await node.admin.call('CONFIG', 'SET', 'replica-priority', '100')
      await until(
        async () => {
          const views = (await Promise.all(
            sentinels.map((sentinel) => sentinel.admin.call('SENTINEL', 'REPLICAS', name)),
          )) as string[][][]
          return views.every((replicas) =>
            replicas.some(
              (fields) =>
                Number(fields[fields.indexOf('port') + 1]) === node.port &&
                fields[fields.indexOf('slave-priority') + 1] === '100',
            ),
          )
        },
        'every Sentinel sees the rejoined replica promotable',
        ms,
      )
    },
  }
  return watched
}

let shared: Promise<PrivateCluster> | undefined

/**
 * One 3-master Cluster for every suite of the test process that reads and
 * writes but kills nothing (the contract suites), started on first use and
 * stopped after all files (preload.ts).
 */
export function sharedCluster(): Promise<PrivateCluster> {
  shared ??= startCluster(3, 0)
  return shared
}

/** A client of a private Cluster, as the service builds one (REDIS_CLUSTER_NODES). */
export function clusterConnector(cluster: PrivateCluster) {
  return redisConnector({
    kind: 'cluster',
    nodes: cluster.nodes.map(({ host, port }) => ({ host, port })),
  })
}

/** Kills every process started here (SIGCONT first, for frozen ones) and removes their directories. */
export async function stopRedisDeployments(): Promise<void> {
  shared = undefined
  for (const admin of admins.splice(0)) admin.disconnect()
  for (const proc of processes.splice(0)) {
    if (proc.exitCode !== null || proc.signalCode !== null) continue
    proc.kill('SIGCONT')
    proc.kill('SIGKILL')
    await proc.exited
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
}
