// The routes an operator's tools call: GET /ready (load balancers, compose
// health checks) and GET /metrics (Prometheus), behind ADMIN_TOKEN like
// `DELETE /cache` when that is set. Mounted for every variant.
import { Elysia, t } from 'elysia'
import { requireAdminToken } from './admin-guard.ts'
import type { Readiness } from './readiness.ts'

/**
 * What GET /metrics serves: a registry's text exposition. The service's
 * metrics (observability/metrics.ts, a prom-client Registry) are one; the
 * edge only reads them.
 */
export interface MetricsRegistry {
  metrics(): Promise<string>
  readonly contentType: string
}

export interface OpsRoutesDeps {
  readiness: Readiness
  metrics: { registry: MetricsRegistry }
  adminToken: string | undefined
}

/** Per store: `ok`, or a short message that is safe to show. */
const Checks = t.Record(t.String(), t.String())
const Ready = t.Object({ status: t.Literal('ready'), checks: Checks })
const NotReady = t.Object({ detail: t.String(), code: t.Literal('not_ready'), checks: Checks })

export function opsRoutes({ readiness, metrics, adminToken }: OpsRoutesDeps) {
  return new Elysia({ name: 'ops-routes' })
    .get(
      '/ready',
      async ({ status }) => {
        const report = await readiness.report()
        if (report.ready) return { status: 'ready' as const, checks: report.checks }
        const detail = report.shuttingDown
          ? 'The service is shutting down.'
          : 'A required store does not answer.'
        return status(503, { detail, code: 'not_ready' as const, checks: report.checks })
      },
      {
        response: { 200: Ready, 503: NotReady },
        detail: {
          tags: ['operations'],
          summary: 'Ready for traffic: stores answer and not shutting down (else 503)',
        },
      },
    )
    .get(
      '/metrics',
      async ({ request }) => {
        requireAdminToken(adminToken, request.headers.get('authorization'), 'Reading the metrics')
        return new Response(await metrics.registry.metrics(), {
          headers: { 'content-type': metrics.registry.contentType },
        })
      },
      {
        detail: {
          tags: ['operations'],
          summary: 'Prometheus metrics (Authorization: Bearer <ADMIN_TOKEN> when that is set)',
        },
      },
    )
}
