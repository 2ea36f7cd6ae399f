// The TypeBox schema of the error body (CONTRACT §3), for OpenAPI descriptions.
import { t } from 'elysia'

export const ErrorBody = t.Object({
  detail: t.String({ description: 'A sentence for a person.' }),
  code: t.String({ description: 'snake_case error code.' }),
})
