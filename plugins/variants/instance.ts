// APP_VARIANT=instance: which instance answered and how many requests to / it
// has handled. The count lives in this plugin's closure, so it is per process
// (each replica behind a load balancer counts on its own).
import { hostname } from 'node:os'
import { Type } from '@sinclair/typebox'
import { Elysia, t } from 'elysia'

const tags = ['examples']

export function instanceVariant() {
  const instance = hostname()
  let requestsHandled = 0
  return new Elysia({ name: 'variant-instance' })
    .get(
      '/',
      () => {
        requestsHandled += 1
        return { instance, requests_handled: requestsHandled }
      },
      {
        response: {
          200: t.Object({
            instance: t.String({ description: 'Host name of the serving instance.' }),
            requests_handled: Type.Integer({ description: 'Calls to / handled by this process.' }),
          }),
        },
        detail: { tags, summary: 'Which instance answered, and its request count' },
      },
    )
    .get('/health', () => ({ status: 'healthy' as const, instance }), {
      response: { 200: t.Object({ status: t.Literal('healthy'), instance: t.String() }) },
      detail: { tags, summary: 'Healthy, with the instance name' },
    })
}
