# Strikebook server and gateway image (docs/operations.md, "Packaging").
#   docker build -t strikebook .
#   docker run -p 8080:8080 -v strikebook-data:/data -e STRIKEBOOK_MODE=production ... strikebook
#   gateway: same image, command ["node", "--import", "tsx", "src/gateway/main.ts"]

# ---- build: dependencies (better-sqlite3 compiles if no prebuilt binary fits), the web app and the server bundle ----
FROM node:24-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# scripts off: `prepare` builds the web app, whose sources are not copied yet; better-sqlite3's own
# install script is run explicitly below
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3 esbuild
COPY tsconfig.json ./
COPY web ./web
COPY src ./src
COPY config ./config
COPY scripts ./scripts
# the web app and the server bundle are built here, once, not at every start (web/dist is served
# from memory; dist/server is what the server runs: scripts/buildServer.ts)
RUN node --import tsx web/build.ts && node --import tsx scripts/buildServer.ts && npm prune --omit=dev

# ---- run: no compilers, no dev dependencies, not root ----
FROM node:24-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown node:node /data
WORKDIR /app
COPY --from=build /app/package.json /app/tsconfig.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/src ./src
COPY --from=build /app/config ./config
COPY --from=build /app/web/dist ./web/dist
COPY --from=build /app/dist/server ./dist/server
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    STRIKEBOOK_DATA_DIR=/data
USER node
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# tini is PID 1: it forwards SIGTERM to node (a graceful stop) and reaps zombies; node is its child,
# started directly, never through npm (npm does not pass SIGTERM on)
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/server/main.js"]
