#!/usr/bin/env bash
# Install (Node 24 and pnpm too, when the machine lacks them) and start the server on the
# embedded database. Extra arguments go to `inboxctl serve`, e.g. --port 8080.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
pnpm install --frozen-lockfile --reporter=silent
exec node --import tsx packages/cli/src/main.ts serve "$@"
