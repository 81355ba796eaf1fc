#!/usr/bin/env bash
# Install (Node 24 and pnpm too, when the machine lacks them) and start the server on the
# embedded database. Extra arguments go to `inboxctl serve`, e.g. --port 8080, or
# --smtp-listen 127.0.0.1:2525 as the README's quick start starts it. No step needs
# a terminal; a step that fails says what failed and how to fix it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
install_deps
exec node --import tsx packages/cli/src/main.ts serve "$@"
