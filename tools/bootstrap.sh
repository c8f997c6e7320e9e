#!/bin/sh
# Idempotent set-up shared by `npm start`, `npm test` and `npm run bench`: dependencies, compiled
# code and the pinned programs, each step skipped when it is already in place. `--cluster` adds what
# a real node needs (tools/cluster.ts): containerd and runc from Debian, the kubelet and the
# controllers, and the node's images (`npm test` and `npm start -- --cluster` ask for it).
# `--production` adds the production-shaped Temporal (tools/temporal-production.ts): PostgreSQL from
# Debian, the Temporal server and its schema tool (`npm test`, `npm start -- --temporal production`).
# `--conformance` adds to `--cluster` what `npm run conformance` needs: Kubernetes' e2e.test and
# agnhost, and Debian's curl and netcat-openbsd for the agnhost image (tools/conformance-images.ts).
set -eu
cd "$(dirname "$0")/.."
say() { printf 'netlease: %s\n' "$*"; }
cluster=""
production=""
conformance=""
for arg in "$@"; do
  case "$arg" in
    --cluster) cluster=1 ;;
    --production) production=1 ;;
    --conformance) conformance=1; cluster=1 ;;
    *) say "unknown argument $arg (known: --cluster, --production, --conformance)"; exit 2 ;;
  esac
done

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm dependencies (npm install; see .ci/run for why not npm ci)"
  npm install --no-audit --no-fund
fi

# The dataplane uses iproute2 and nsenter; the ptp tests ping between namespaces; the mTLS test
# makes certificates with openssl and puts nginx (a TLS-terminating gRPC proxy) before Temporal;
# the metrics test checks the exposition with promtool and scrapes it with a real Prometheus;
# the UI test drives the Temporal Web UI with playwright-core in Debian's chromium.
missing=""
command -v ip >/dev/null 2>&1 || missing="$missing iproute2"
command -v nsenter >/dev/null 2>&1 || missing="$missing util-linux"
command -v ping >/dev/null 2>&1 || missing="$missing iputils-ping"
command -v openssl >/dev/null 2>&1 || missing="$missing openssl"
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || missing="$missing nginx"
{ command -v promtool && command -v prometheus; } >/dev/null 2>&1 || missing="$missing prometheus"
[ -x /usr/bin/chromium ] || missing="$missing chromium"
# A real node: the runtime, and busybox (the workload image) and a C compiler (the pause image).
if [ -n "$cluster" ]; then
  command -v containerd >/dev/null 2>&1 || missing="$missing containerd"
  command -v runc >/dev/null 2>&1 || missing="$missing runc"
  dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || missing="$missing busybox-static"
  command -v gcc >/dev/null 2>&1 || missing="$missing gcc libc6-dev"
fi
if [ -n "$conformance" ]; then
  command -v curl >/dev/null 2>&1 || missing="$missing curl"
  command -v nc.openbsd >/dev/null 2>&1 || missing="$missing netcat-openbsd"
fi
if [ -n "$production" ]; then
  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing="$missing postgresql"
fi
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ]; then
    say "missing Debian packages:$missing (install them as root, then run this again)"
    exit 1
  fi
  say "installing Debian packages:$missing"
  apt-get update -qq
  # Only the nginx, prometheus, containerd and PostgreSQL binaries are wanted: while installing, a
  # policy-rc.d that refuses every start keeps the packages from starting a system nginx on port 80,
  # a system Prometheus on port 9090, a system containerd or PostgreSQL on port 5432 (one already
  # there is left as it is).
  policy=/usr/sbin/policy-rc.d
  made_policy=""
  if [ ! -e "$policy" ]; then
    trap 'rm -f "$policy"' EXIT # also when the install fails
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && made_policy=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
  if [ -n "$made_policy" ]; then rm -f "$policy" && trap - EXIT; fi
  # A policy-rc.d of the machine's own may have let it start: stop it, and keep it off at boot.
  case "$missing" in *nginx*)
    [ ! -s /run/nginx.pid ] || /usr/sbin/nginx -s quit || true
    if command -v systemctl >/dev/null 2>&1; then systemctl disable --quiet nginx 2>/dev/null || true; fi ;;
  esac
  case "$missing" in *prometheus*)
    if command -v systemctl >/dev/null 2>&1; then
      systemctl disable --quiet prometheus 2>/dev/null || true # works without a running systemd too
      systemctl stop prometheus 2>/dev/null || true
    fi
    # Without systemd, the package's init script (start-stop-daemon, pid file in /run).
    [ ! -x /etc/init.d/prometheus ] || /etc/init.d/prometheus stop >/dev/null 2>&1 || true
    command -v update-rc.d >/dev/null 2>&1 && update-rc.d prometheus disable >/dev/null 2>&1 || true ;;
  esac
  case "$missing" in *containerd*)
    if command -v systemctl >/dev/null 2>&1; then systemctl disable --quiet containerd 2>/dev/null || true; fi ;;
  esac
  case "$missing" in *postgresql*)
    if command -v systemctl >/dev/null 2>&1; then systemctl disable --quiet postgresql 2>/dev/null || true; fi ;;
  esac
fi

stamp=dist/.built
if [ ! -f "$stamp" ] || [ -n "$(find domain workflows activities kernel kubernetes temporal worker cni observability storage cli tools test package-lock.json tsconfig.json -newer "$stamp" -type f -print -quit)" ]; then
  say "compiling TypeScript and bundling workflows"
  rm -rf dist # a clean build: output of a removed or renamed source must not linger
  npx tsc -p tsconfig.json
  node dist/tools/bundle-workflows.js
  touch "$stamp"
fi

# The CNI executable: a static Go binary from cni/shim (the one piece not in TypeScript: the
# runtime execs it for every call on hosts without Node). bin/netlease links to it.
shim=dist/bin/netlease
if [ ! -x "$shim" ] || [ -n "$(find cni/shim -newer "$shim" -type f -print -quit)" ]; then
  say "building the CNI shim (static Go binary) into $shim"
  (cd cni/shim && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o ../../"$shim" .)
fi

node dist/tools/programs.js ${NETLEASE_PROGRAMS:-default} ${cluster:+cluster} ${production:+production} ${conformance:+conformance}
[ -z "$cluster" ] || node dist/tools/node-images.js
say "set-up complete"
