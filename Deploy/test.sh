#!/usr/bin/env bash
# Runs the whole test suite: installs missing packages, builds, and runs `swift test`
# (unit tests, then integration tests that start real servers on 127.0.0.1).
set -euo pipefail
cd "$(dirname "$0")/.."

bash Deploy/install-deps.sh
swift build --build-tests
swift test "$@"
