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

stamp=dist/.built
if [ ! -f "$stamp" ] || [ -n "$(find domain workflows activities worker cni tools test package-lock.json tsconfig.json -newer "$stamp" -type f -print -quit)" ]; then
  say "compiling TypeScript and bundling workflows"
  rm -rf dist # a clean build: output of a removed or renamed source must not linger
  npx tsc -p tsconfig.json
  node dist/tools/bundle-workflows.js
  touch "$stamp"
fi

node dist/tools/programs.js ${NETLEASE_PROGRAMS:-}
say "set-up complete"
