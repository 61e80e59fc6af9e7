#!/usr/bin/env bash
# Builds the release `plistsync` with the Swift runtime and Foundation linked in, so the binary
# runs on a machine without the toolchain and an idle agent maps ~17 MB of code instead of
# ~24 MB of shared libraries. The static Foundation archive makes the linker repeat glibc's
# note about mktemp (Foundation's own code); that one line is left out of the output.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! swift build -c release --product plistsync --static-swift-stdlib > "$log" 2>&1; then
    cat "$log"
    exit 1
fi
grep -v "the use of .mktemp. is dangerous" "$log" || true
