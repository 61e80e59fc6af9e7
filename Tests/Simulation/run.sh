#!/usr/bin/env bash
# Runs the deterministic simulation (Tests/SimulationTests) in a release build, one process a
# core, each on its own range of seeds; exits non-zero when any seed breaks an invariant, and
# prints the command that replays it.
#
#   bash Tests/Simulation/run.sh               # 10,000 seeds (what the test command runs)
#   bash Tests/Simulation/run.sh --runs 50000  # more seeds
#   bash Tests/Simulation/run.sh 60            # as many seeds as fit in 60 minutes
#   SIMULATION_FIRST=123456 bash Tests/Simulation/run.sh   # start at another seed
#
# Replay one seed (any build): PLISTSYNC_SIMULATION_SEED=N swift test --filter SimulationTests
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=10000
minutes=0
case "${1:-}" in
    --runs) runs=${2:?--runs needs a number} ;;
    "") ;;
    *) minutes=$1 ;;
esac
first=${SIMULATION_FIRST:-1}
processes=${SIMULATION_PROCESSES:-$(nproc)}
# Each run leaves one descriptor open (a server's lock on its data folder is held until the
# process ends), so a process takes at most this many seeds.
chunk=${SIMULATION_CHUNK:-250}
ulimit -n 4096 2>/dev/null || true

# A build folder of its own: built in .build/release with -enable-testing, it would replace the
# static `plistsync` that Deploy/build-release.sh makes there (the README's and the benchmarks'
# binary) with a dynamically linked one (about 14 % more server CPU per write in one same-run
# comparison).
mkdir -p .build
# SIMULATION_MUTATIONS compiles in the deliberately broken behaviours of the mutation check
# (Tests/Simulation/mutations.sh); none is on unless PLISTSYNC_MUTATION names it.
swift build -c release --build-tests -Xswiftc -enable-testing -Xswiftc -DSIMULATION_MUTATIONS --build-path .build/simulation > .build/simulation-build.log 2>&1 || { cat .build/simulation-build.log; exit 1; }
bundle=.build/simulation/release/PlistSyncPackageTests.xctest
logs=$(mktemp -d)
[ -n "${SIMULATION_KEEP_LOGS:-}" ] || trap 'rm -rf "$logs"' EXIT

started=$(date +%s)
deadline=$((started + minutes * 60))
next=$first
done_runs=0
failed=0
declare -A running=()   # pid -> the log of its chunk

# A chunk's log, once its process has ended: failures are printed and counted.
finish() {
    local log=$1
    if grep -q "replay:" "$log"; then
        grep -E "^  |seed [0-9]+:" "$log" | head -40
        failed=$((failed + $(grep -c "replay:" "$log")))
    fi
    grep -q "^simulation:" "$log" || { echo "a simulation process ended without its summary:"; tail -20 "$log"; failed=$((failed + 1)); }
    [ -n "${SIMULATION_KEEP_LOGS:-}" ] || rm -f "$log"
}

more() {
    [ "$failed" -eq 0 ] || return 1
    if [ "$minutes" -gt 0 ]; then [ "$(date +%s)" -lt "$deadline" ]; else [ "$done_runs" -lt "$runs" ]; fi
}

# Chunks of seeds go to the processes as each one frees up (no process waits for a slower one).
while more || [ "${#running[@]}" -gt 0 ]; do
    while more && [ "${#running[@]}" -lt "$processes" ]; do
        size=$chunk
        if [ "$minutes" -eq 0 ]; then
            left=$((runs - done_runs))
            [ "$size" -le "$left" ] || size=$left
        fi
        PLISTSYNC_SIMULATION_FIRST=$next PLISTSYNC_SIMULATION_RUNS=$size "$bundle" SimulationTests.SimulationTests/testSeededRunsConvergeAndLoseNothing \
            > "$logs/$next.log" 2>&1 &
        running[$!]="$logs/$next.log"
        next=$((next + size))
        done_runs=$((done_runs + size))
    done
    wait -n || true
    for pid in "${!running[@]}"; do
        kill -0 "$pid" 2>/dev/null && continue
        wait "$pid" 2>/dev/null || true
        finish "${running[$pid]}"
        unset "running[$pid]"
    done
done
seconds=$(( $(date +%s) - started ))
echo "simulation: $done_runs seeded runs from seed $first in $seconds s on $processes processes, $failed failed"
[ "$failed" -eq 0 ]
