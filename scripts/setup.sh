#!/usr/bin/env bash
# Idempotent set-up for the lab, called by make. Each step checks first and is skipped when
# already satisfied; each failure says what to do next.
#   scripts/setup.sh venv        virtualenv with the locked Python packages + the lab itself
#   scripts/setup.sh system      Debian redis-server, chromium, chromium-headless-shell (lab setup system)
#   scripts/setup.sh toxiproxy   Toxiproxy server + CLI v2.12.0 via `go install` (lab setup toxiproxy)
#   scripts/setup.sh node        the Node examples' packages (npm ci in examples/node, node-ai, compose-app/app)
#   scripts/setup.sh go          the Go examples (go build in examples/go, go-sse, go-ws, go-tmpl)
#   scripts/setup.sh docker      a Docker engine for the compose tests
#   scripts/setup.sh all         all of them
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${LAB_VENV:-$ROOT/.venv}
BIN=${LAB_BIN:-$ROOT/.lab/bin}
COMPOSE_V2_VERSION=2.29.7
PYTHON=${PYTHON:-python3}

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

step_venv() {
  local stamp="$VENV/.lab-installed"
  local want
  want=$(cat "$ROOT/requirements.lock" "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    say "venv: up to date ($VENV)"; return
  fi
  command -v "$PYTHON" >/dev/null || die "no $PYTHON on PATH: install Python >= 3.11 (apt-get install python3 python3-venv)"
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || die "$PYTHON is $("$PYTHON" -V 2>&1); the lab needs Python >= 3.11 (set PYTHON=/path/to/python3.11)"
  if [ ! -x "$VENV/bin/python" ]; then
    say "venv: creating $VENV"
    "$PYTHON" -m venv "$VENV" || die "could not create a venv: install python3-venv (apt-get install python3-venv)"
  fi
  say "venv: installing locked packages (requirements.lock)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$ROOT/requirements.lock" \
    || die "pip could not install requirements.lock: is PyPI reachable? (pip config list)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e "$ROOT" \
    || die "pip could not install the lab itself (pip install -e .)"
  echo "$want" > "$stamp"
  say "venv: ready"
}

# Debian's packages and Toxiproxy: the lab's own `lab setup` (lab/commands/needs.py), the code a
# user of the installed lab runs too -- from the venv, which this step brings up first.
lab_setup() {
  step_venv >/dev/null
  "$VENV/bin/python" -m lab setup "$@" || exit 1
}

step_system() { lab_setup system; }

step_toxiproxy() { LAB_BIN="$BIN" lab_setup toxiproxy; }

# Compose mode on a machine without a registry: a Docker engine the lab can start itself,
# docker-compose 1.29 and debootstrap (for an offline base image). Optional: without root the
# step says what to install and compose tests skip with that reason.
step_docker() {
  step_compose_v2
  local missing=() pair
  for pair in dockerd:docker.io docker-compose:docker-compose debootstrap:debootstrap; do
    command -v "${pair%%:*}" >/dev/null || [ -x "/usr/sbin/${pair%%:*}" ] || missing+=("${pair#*:}")
  done
  if [ ${#missing[@]} -eq 0 ]; then say "docker: dockerd, docker-compose, debootstrap present"; return; fi
  if [ "$(id -u)" -ne 0 ]; then
    say "docker: missing ${missing[*]} (compose mode only); as root run: apt-get install -y ${missing[*]}"
    return
  fi
  say "docker: installing ${missing[*]} (apt)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; } \
    || die "apt-get install ${missing[*]} failed; try it by hand to see why"
  say "docker: installed ${missing[*]}"
}

# Docker Compose v2 (the `docker compose` most machines have), built with go install: the compose
# tests run an investigation with it beside docker-compose 1.29. Optional: without Go it says so.
step_compose_v2() {
  local bin="$BIN/docker-compose-v2"
  if [ -x "$bin" ] && "$bin" version 2>/dev/null | grep -q "$COMPOSE_V2_VERSION"; then
    say "compose v2: $COMPOSE_V2_VERSION present ($bin)"; return
  fi
  local go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
  if ! command -v "$go" >/dev/null; then
    say "compose v2: no Go toolchain; its compose test will skip (install Go, then make setup)"; return
  fi
  mkdir -p "$BIN"
  local gobin; gobin=$(mktemp -d)
  trap 'rm -rf "$gobin"; trap - RETURN' RETURN  # once: step_docker returns after this
  say "compose v2: go install v$COMPOSE_V2_VERSION (about 2 minutes the first time on 2 cores)"
  GOBIN="$gobin" GOFLAGS=-mod=mod "$go" install \
    -ldflags "-X github.com/docker/compose/v2/internal.Version=v$COMPOSE_V2_VERSION" \
    "github.com/docker/compose/v2/cmd@v$COMPOSE_V2_VERSION" \
    || { say "compose v2: go install failed (is the Go module proxy reachable?); its compose test will skip"; return; }
  install -m 0755 "$gobin/cmd" "$bin"
  say "compose v2: $("$bin" version) installed in $bin"
}

step_node() {
  # The Node examples (Express, Socket.IO, ioredis; the Vercel AI SDK, node-redis), each from its
  # package-lock.json: examples/node and examples/node-ai run as processes, examples/compose-app/app
  # is copied into its image.
  local dir stamp want
  command -v npm >/dev/null || die "no npm on PATH: apt-get install nodejs npm (Node >= 18), then make setup"
  for dir in "$ROOT/examples/node" "$ROOT/examples/node-ai" "$ROOT/examples/compose-app/app"; do
    stamp="$dir/node_modules/.lab-installed"
    want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
      say "node: ${dir#"$ROOT"/} up to date"; continue
    fi
    say "node: installing ${dir#"$ROOT"/} (npm ci)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) \
      || die "npm ci failed in ${dir#"$ROOT"/}: is the npm registry reachable? (npm config get registry)"
    echo "$want" >"$stamp"
  done
}

# The Go examples (net/http, go-redis): each built once from its go.sum, the binary beside its source.
step_go() {
  local dir want
  local go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
  for dir in "$ROOT/examples/go" "$ROOT/examples/go-sse" "$ROOT/examples/go-ws" "$ROOT/examples/go-tmpl"; do
    # (templates and scripts a binary embeds, below its folder too)
    want=$(find "$dir" -path "$dir/.lab" -prune -o \( -name '*.go' -o -name '*.html' -o -name '*.js' -o -name 'go.mod' \
      -o -name 'go.sum' \) -print | sort | xargs cat | sha256sum | cut -d' ' -f1)
    if [ -x "$dir/chatd" ] && [ -f "$dir/.lab-built" ] && [ "$(cat "$dir/.lab-built")" = "$want" ]; then
      say "go: ${dir#"$ROOT"/} up to date"; continue
    fi
    [ -x "$go" ] || die "no go on PATH: install Go >= 1.22 (apt-get install golang-go), then make setup"
    say "go: building ${dir#"$ROOT"/} (go build)"
    (cd "$dir" && "$go" build -o chatd .) \
      || die "go build failed in ${dir#"$ROOT"/}: is the Go module proxy reachable? (go env GOPROXY)"
    echo "$want" >"$dir/.lab-built"
  done
}

case "${1:-all}" in
  venv) step_venv ;;
  system) step_system ;;
  toxiproxy) step_toxiproxy ;;
  docker) step_docker ;;
  node) step_node ;;
  go) step_go ;;
  all) step_venv; step_system; step_toxiproxy; step_node; step_go; step_docker ;;
  *) die "unknown step '${1}'; valid: venv, system, toxiproxy, node, go, docker, all" ;;
esac
