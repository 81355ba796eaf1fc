#!/usr/bin/env bash
# Install (Node 24 and pnpm too, when the machine lacks them), type-check every package and
# run the whole test suite. Storage tests run on PGlite always, and also on PostgreSQL when
# INBOX_TEST_DATABASE_URL is set. Arguments go to vitest (a file or a -t filter). No step
# needs a terminal; a setup step that fails says what failed and how to fix it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
install_deps
echo "type-checking..."
if ! pnpm -s typecheck; then
  setup_failed "type-checking (pnpm -s typecheck)" "correct the type errors listed above; the tests did not run."
  exit 1
fi
report="$(mktemp)"
status=0
pnpm -s vitest run --reporter=default --reporter=json --outputFile.json="$report" "$@" </dev/null || status=$?
# One plain closing line, for readers that look for "N passed, N failed".
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed`);
' "$report" 2>/dev/null || true
rm -f "$report"
exit "$status"
