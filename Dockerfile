# syntax=docker/dockerfile:1
# The one netlease image: the control worker, the node agent and its install-cni init container
# each run `node dist/...` from /app (deploy/ names the commands). Build: docker build -t netlease:dev .
# Without Docker, tools/netlease-image.ts builds the same layout as an OCI archive (one recipe:
# test/unit/image-recipe compares this file with its RECIPE).
ARG GO_VERSION=1.26
ARG NODE_VERSION=20

# The CNI shim: a static Go binary (no libc, no Node), so any host's runtime can exec it. Built in
# its own directory, so its go.mod may sit at the top of the repository or in cni/shim/.
FROM golang:${GO_VERSION} AS shim
RUN --mount=type=bind,target=/src \
    --mount=type=cache,target=/root/.cache/go-build \
    --mount=type=cache,target=/go/pkg/mod \
    cd /src/cni/shim && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/netlease .

# TypeScript compiled and the workflows bundled; then only production dependencies are kept.
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# `npm install`, not `npm ci`: the lock lacks @swc/core's off-platform packages (see .ci/run).
RUN npm install --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev --no-audit --no-fund && rm -rf dist/test dist/.tsbuildinfo

# The dataplane runs `ip` (iproute2), `nsenter` (util-linux), `cat` and `tee` (coreutils, in the
# base already; named so tools/netlease-image's RECIPE and this stage list the same packages).
FROM node:${NODE_VERSION}-bookworm-slim
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends iproute2 util-linux coreutils \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Where install-cni takes it from by default (worker/agent/install-cni.ts).
COPY --from=shim /out/netlease ./dist/bin/netlease
