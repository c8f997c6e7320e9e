#!/bin/sh
# Idempotent set-up shared by `npm start`, `npm test` and `npm run bench`: dependencies, compiled
# code and the pinned programs, each step skipped when it is already in place.
set -eu
cd "$(dirname "$0")/.."
say() { printf 'netlease: %s\n' "$*"; }

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm dependencies (npm install; see .ci/run for why not npm ci)"
  npm install --no-audit --no-fund
fi

# The dataplane uses iproute2 and nsenter; the ptp tests ping between namespaces.
missing=""
command -v ip >/dev/null 2>&1 || missing="$missing iproute2"
command -v nsenter >/dev/null 2>&1 || missing="$missing util-linux"
command -v ping >/dev/null 2>&1 || missing="$missing iputils-ping"
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ]; then
    say "missing Debian packages:$missing (install them as root, then run this again)"
    exit 1
  fi
  say "installing Debian packages:$missing"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi

stamp=dist/.built
if [ ! -f "$stamp" ] || [ -n "$(find domain workflows activities kernel kubernetes temporal worker cni tools test package-lock.json tsconfig.json -newer "$stamp" -type f -print -quit)" ]; then
  say "compiling TypeScript and bundling workflows"
  rm -rf dist # a clean build: output of a removed or renamed source must not linger
  npx tsc -p tsconfig.json
  node dist/tools/bundle-workflows.js
  touch "$stamp"
fi

node dist/tools/programs.js ${NETLEASE_PROGRAMS:-}
say "set-up complete"
