#!/usr/bin/env bash
# Prepares a (possibly fresh) machine for `npm start` / `npm test`: pnpm, the workspace's
# node_modules, redis-server, and the local stack's artifacts (Kafka jars, Apicurio Registry) in the
# cache. Idempotent, and quick when everything is already there. Works as root or not.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"

PNPM_VERSION="12.4.2"
STAMP="node_modules/.tidemark-install-stamp"

say() { printf 'bootstrap: %s\n' "$*"; }
die() {
  printf 'bootstrap: error: %s\n' "$*" >&2
  exit 1
}

t0="${EPOCHREALTIME/./}"
elapsed() { awk -v a="$t0" -v b="${EPOCHREALTIME/./}" 'BEGIN { printf "%.1f", (b - a) / 1000000 }'; }

# root, or password-less sudo, may install Debian packages
SUDO=()
CAN_ROOT=1
if [[ "$(id -u)" != 0 ]]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO=(sudo -n); else CAN_ROOT=0; fi
fi
can_apt() { ((CAN_ROOT)) && command -v apt-get >/dev/null 2>&1; }

APT_UPDATED=0
OWN_POLICY=""
drop_policy() {
  if [[ -n "$OWN_POLICY" ]]; then
    ${SUDO[@]+"${SUDO[@]}"} rm -f "$OWN_POLICY" || true
    OWN_POLICY=""
  fi
}
trap drop_policy EXIT
apt_install() {
  can_apt || return 1
  say "installing $* (apt-get)…"
  export DEBIAN_FRONTEND=noninteractive
  if ((!APT_UPDATED)); then
    ${SUDO[@]+"${SUDO[@]}"} apt-get update -qq || return 1
    APT_UPDATED=1
  fi
  # Keep Debian's maintainer scripts from starting services (redis on 6379) while installing:
  # a temporary policy-rc.d, unless the machine already has one.
  local policy=/usr/sbin/policy-rc.d
  if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\nexit 101\n' | ${SUDO[@]+"${SUDO[@]}"} tee "$policy" >/dev/null &&
      ${SUDO[@]+"${SUDO[@]}"} chmod +x "$policy" && OWN_POLICY="$policy"
  fi
  local rc=0
  ${SUDO[@]+"${SUDO[@]}"} apt-get install -y -qq --no-install-recommends "$@" >/dev/null || rc=$?
  drop_policy
  return "$rc"
}

# 1. pnpm ------------------------------------------------------------------------------------------
command -v node >/dev/null 2>&1 || die "node is not installed (Node.js >= 20.19 is needed)"
current_pnpm="$(pnpm -v 2>/dev/null || true)"
if [[ "$current_pnpm" != "$PNPM_VERSION" ]]; then
  say "installing pnpm $PNPM_VERSION (found: ${current_pnpm:-none})…"
  npm i -g --silent --no-fund --no-audit "pnpm@$PNPM_VERSION" >/dev/null ||
    die "npm i -g pnpm@$PNPM_VERSION failed (not root? try: npm i -g --prefix ~/.local pnpm@$PNPM_VERSION and put ~/.local/bin on PATH)"
  hash -r
  current_pnpm="$(pnpm -v 2>/dev/null || true)"
  [[ "$current_pnpm" == "$PNPM_VERSION" ]] ||
    die "pnpm on PATH ($(command -v pnpm || echo none)) is ${current_pnpm:-missing}, not $PNPM_VERSION; put npm's global bin ($(npm prefix -g)/bin) first on PATH"
fi

# 2. node_modules ----------------------------------------------------------------------------------
install_wanted() {
  [[ -d node_modules/.pnpm && -f "$STAMP" ]] || return 0
  [[ "$(cat "$STAMP")" == "pnpm $PNPM_VERSION node $(node -v)" ]] || return 0
  local f
  for f in pnpm-lock.yaml pnpm-workspace.yaml package.json libs/*/package.json services/*/package.json test/package.json; do
    [[ -f "$f" && "$f" -nt "$STAMP" ]] && return 0
  done
  return 1
}
if install_wanted; then
  say "pnpm install --frozen-lockfile…"
  ti="${EPOCHREALTIME/./}"
  pnpm install --frozen-lockfile --reporter=append-only ||
    die "pnpm install --frozen-lockfile failed (is pnpm-lock.yaml up to date with the package.json files? run 'pnpm install' and commit the lockfile)"
  printf 'pnpm %s node %s\n' "$PNPM_VERSION" "$(node -v)" >"$STAMP"
  say "dependencies installed in $(awk -v a="$ti" -v b="${EPOCHREALTIME/./}" 'BEGIN { printf "%.1f", (b - a) / 1000000 }')s"
fi

# 3. system packages: redis-server, chromium, and what the stack's fetch needs --------------------------------
if ! command -v redis-server >/dev/null 2>&1; then
  apt_install redis-server || die "redis-server is missing and could not be installed: apt-get install -y redis-server"
  command -v redis-server >/dev/null 2>&1 || die "redis-server still missing after apt-get install"
  say "redis-server installed ($(redis-server --version | awk '{print $3}' | sed 's/^v=//'))"
fi
# Debian's chromium: the session page's test drives it headless (playwright-core, its executable path).
if ! command -v chromium >/dev/null 2>&1; then
  apt_install chromium || die "chromium is missing and could not be installed: apt-get install -y chromium"
  command -v chromium >/dev/null 2>&1 || die "chromium still missing after apt-get install"
  say "chromium installed"
fi
if ! command -v curl >/dev/null 2>&1; then
  apt_install curl || die "curl is missing: apt-get install -y curl"
fi
if ! command -v java >/dev/null 2>&1; then
  apt_install openjdk-17-jre-headless || die "no java on PATH: apt-get install -y openjdk-17-jre-headless"
fi
cache="${TIDEMARK_CACHE:-${HOME:-/tmp}/.cache/tidemark}"
if ! command -v mvn >/dev/null 2>&1 && ! ls -d "$cache"/kafka-*/libs "$cache"/apicurio-registry-*/quarkus-run.jar >/dev/null 2>&1; then
  apt_install maven || die "Maven is missing (needed once, to fetch Kafka and the registry): apt-get install -y maven"
fi

# 4. the stack's artifacts -------------------------------------------------------------------------
bash infra/stack.sh fetch | sed 's/^/bootstrap: /'

say "ready in $(elapsed)s"
