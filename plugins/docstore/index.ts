// Entry point of the document store plugin, mounted by src/app.ts for APP_VARIANT=full.
export { type DocstoreDeps, docstorePlugin, SERVICE_NAME } from './routes.ts'
