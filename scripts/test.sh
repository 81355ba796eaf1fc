#!/usr/bin/env bash
# Install (Node 24 and pnpm too, when the machine lacks them; Debian's Chromium and isync when
# run as root), type-check every package and run the whole test suite. Storage tests run on PGlite
# always, and also on PostgreSQL when INBOX_TEST_DATABASE_URL is set. A file that needs
# PostgreSQL, Chromium or mbsync where there is none is skipped, with its reason printed above the
# closing line; with INBOX_TEST_REQUIRE_ALL=1 (CI) that is an error, and so is any skipped
# test. Arguments go to vitest (a file or a -t filter). No step needs a terminal; a setup
# step that fails says what failed and how to fix it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
install_deps
bring_chromium
bring_mbsync
node --import tsx scripts/test-report.ts check
echo "type-checking..."
if ! pnpm -s typecheck; then
  setup_failed "type-checking (pnpm -s typecheck)" "correct the type errors listed above; the tests did not run."
  exit 1
fi
report="$(mktemp)"
status=0
pnpm -s vitest run --reporter=default --reporter=json --outputFile.json="$report" "$@" </dev/null || status=$?
# The files left out and one plain closing line: N passed, N failed, N skipped, failed files.
# Its exit status is the run's (vitest's, unless it found only files left out, or CI mode
# saw a skipped test).
final=0
node --import tsx scripts/test-report.ts summary "$report" "$status" "$@" || final=$?
rm -f "$report"
exit "$final"
