# The service image, on the official Bun image. One image serves every
# APP_VARIANT; compose.yaml runs it as `app` and as the example variants.
ARG BUN_VERSION=1.4.5

# Production dependencies only, from the lockfile, in a layer of their own so
# a code change does not reinstall them.
FROM oven/bun:${BUN_VERSION} AS deps
WORKDIR /app
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile --production

FROM oven/bun:${BUN_VERSION}
WORKDIR /app
ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    DATA_DIR=/app/.data
COPY --from=deps /app/node_modules ./node_modules
COPY package.json bun.lock tsconfig.json ./
COPY src ./src
COPY plugins ./plugins
# The embedded database (used only when DATABASE_URL is unset) needs a
# writable directory owned by the unprivileged user.
RUN mkdir -p /app/.data && chown bun:bun /app/.data
USER bun
EXPOSE 3000
# Exec form: bun is the process that gets SIGTERM and drains running turns
# before exiting 0 (compose adds an init process to forward it and reap).
CMD ["bun", "run", "src/index.ts"]
