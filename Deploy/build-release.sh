#!/usr/bin/env bash
# Builds the release `plistsync` with the Swift runtime and Foundation linked in, so the binary
# runs on a machine without the toolchain and an idle agent maps ~18 MB of code instead of
# ~24 MB of shared libraries. Where the toolchain cannot link statically, it builds the usual
# dynamically linked binary instead and says so. The static Foundation archive makes the
# linker repeat glibc's note about mktemp (Foundation's own code); that line is left out.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if swift build -c release --product plistsync --static-swift-stdlib > "$log" 2>&1; then
    grep -v "the use of .mktemp. is dangerous" "$log" || true
    exit 0
fi
tail -n 20 "$log"
echo "build-release: static linking failed (above); building a dynamically linked binary" >&2
swift build -c release --product plistsync
