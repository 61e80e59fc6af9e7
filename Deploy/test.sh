#!/usr/bin/env bash
# Runs the whole test suite: installs missing packages, builds, and runs `swift test`
# (unit tests, then integration tests that start real servers on 127.0.0.1), then the
# deterministic simulation for SIMULATION_RUNS seeds in a release build (default 10,000; 0 skips
# it; Tests/Simulation/run.sh MINUTES runs it long) and its mutation check
# (Tests/Simulation/mutations.sh), then the libFuzzer harnesses for
# FUZZ_SECONDS each (default 20; 0 skips them; Tests/Fuzz/run.sh runs them long). Between them,
# the connection tests run again under the address sanitizer (SANITIZER_TESTS=0 skips them).
# The tests are XCTest; the last line sums them up as "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."

# openssl: TLS tests replay a transcript through s_client; systemd: systemd-analyze checks the units;
# postgresql: the cluster tests start a throwaway PostgreSQL server (initdb in a temp folder);
# haproxy: a cluster test fails a node over through Deploy/cluster/haproxy.cfg; curl: the HTTP API
# tests replay Protocol/HTTP.md's examples and speak HTTPS; chromium, chromium-driver, python3-selenium:
# BrowserTests drive the web console in a headless Chromium (Tests/Browser/console.py);
# libpython3.11-testsuite, librust-plist-dev, libplist-utils, python3-biplist: other projects' plists
# and readers that OutsideReadersTests and the plist fuzzers check against (Tests/Fidelity);
# nodejs: the console's merge module runs the merge table (Tests/Console); zbar-tools: an outside
# decoder reads the console's QR codes (Tests/Console/qr-decode.mjs, and a browser screenshot).
bash Deploy/install-deps.sh openssl systemd postgresql haproxy curl chromium chromium-driver python3-selenium \
    libpython3.11-testsuite librust-plist-dev libplist-utils python3-biplist nodejs zbar-tools
export PLISTSYNC_REQUIRE_OUTSIDE_DATA=1
swift build --build-tests
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
swift test --disable-swift-testing "$@" 2>&1 | tee "$log" || status=$?
# The connection close paths again under the address sanitizer (its own build folder): a
# use after free there aborts the server and fails the test. Leak reports are off: they would
# list Foundation's and XCTest's process-lifetime allocations.
if [ "${SANITIZER_TESTS:-1}" != 0 ] && [ "$#" -eq 0 ]; then
    sanitized=(--sanitize=address --build-path .build/asan)
    asan_log=$(mktemp)
    if swift build --build-tests "${sanitized[@]}" > "$asan_log" 2>&1 && ASAN_OPTIONS=detect_leaks=0 swift test --skip-build \
        --disable-swift-testing "${sanitized[@]}" --filter 'EventLoopTests|ConnectionCloseTests|HTTPAPITests|HTTPAPIProcessTests|HTTPKitTests' >> "$asan_log" 2>&1; then
        echo "address sanitizer: $(grep -E "^[[:space:]]*Executed [0-9]+ tests?" "$asan_log" | tail -n 1 | sed -E 's/^[[:space:]]*//')"
    else
        grep -E "error|ERROR|Sanitizer|Executed" "$asan_log" | head -n 40
        echo "address sanitizer: FAILED"
        status=1
    fi
    rm -f "$asan_log"
fi
simulation_runs=${SIMULATION_RUNS:-10000}
if [ "$simulation_runs" -gt 0 ] && [ "$#" -eq 0 ]; then
    bash Tests/Simulation/run.sh --runs "$simulation_runs" || status=1
    # Deliberately broken builds the simulation must catch (MUTATION_RUNS seeds each).
    bash Tests/Simulation/mutations.sh || status=1
fi
fuzz_seconds=${FUZZ_SECONDS:-20}
if [ "$fuzz_seconds" -gt 0 ] && [ "$#" -eq 0 ]; then
    bash Tests/Fuzz/run.sh "$fuzz_seconds" || status=1
fi
summary=$(grep -E "^[[:space:]]*Executed [0-9]+ tests?, with [0-9]+ failures?" "$log" | tail -n 1 || true)
if [ -n "$summary" ]; then
    total=$(echo "$summary" | sed -E 's/.*Executed ([0-9]+) tests?.*/\1/')
    failed=$(echo "$summary" | sed -E 's/.*with ([0-9]+) failures?.*/\1/')
    echo "$((total - failed)) passed, $failed failed"
fi
exit "$status"
