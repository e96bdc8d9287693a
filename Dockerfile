# syntax=docker/dockerfile:1
# mcp-negotiate-proxy: build with the dev toolchain, ship only dist/ and production dependencies.
#
# The proxy in front of its built-in demo server, reachable from this machine only:
#   docker build -t mcp-negotiate-proxy .
#   docker run --rm -p 127.0.0.1:8080:8080 -e MCP_PROXY_ALLOW_UNAUTHENTICATED=1 mcp-negotiate-proxy
# The image binds 0.0.0.0 (the container's own interface), so it starts only with authentication
# (auth.tokens or auth.jwt in a config) or MCP_PROXY_ALLOW_UNAUTHENTICATED=1, which is safe only
# next to a port published on 127.0.0.1 as above. test/e2e/docker.test.ts runs these lines.

FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
RUN npm ci --ignore-scripts
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:22-bookworm-slim
ENV NODE_ENV=production \
    MCP_PROXY_HOST=0.0.0.0 \
    MCP_PROXY_PORT=8080
WORKDIR /app
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY package.json ./
COPY config ./config
# The plugins the example configs load (config/examples/*.yaml: ../../examples/plugins/…).
COPY examples ./examples
# The image's unprivileged user; the proxy needs no write access anywhere.
USER node
EXPOSE 8080
# Healthy = ready to serve: the upstream answers an initialize (/readyz; cached a few seconds).
# Orchestrators with both probes: liveness /healthz, readiness /readyz.
HEALTHCHECK --interval=30s --timeout=15s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.MCP_PROXY_PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "dist/main.js"]
