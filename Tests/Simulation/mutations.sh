#!/usr/bin/env bash
# The simulation's mutation check: each deliberately broken behaviour compiled into the
# simulation's build (Sources/SyncProtocol/Mutation.swift) is switched on in turn. The seeded runs
# (MUTATION_RUNS seeds, default 2,000) must break an invariant with it; prints the first seed
# that did. Exits non-zero when a mutation goes uncaught by the seeded runs (a hole in their
# invariants), saying whether the scripted scenarios (ScenarioTests) catch it.
#
#   bash Tests/Simulation/mutations.sh
#   MUTATION_RUNS=10000 bash Tests/Simulation/mutations.sh names-compared-as-strings
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${MUTATION_RUNS:-2000}
mutations=("$@")
[ "${#mutations[@]}" -gt 0 ] || mutations=(names-compared-as-strings refused-push-never-retried stale-save-order-rule-removed older-change-taken
    merge-conflict-copy-skipped delete-beats-edit save-during-push-taken-as-pushed binary-dates-from-1970 big-integers-through-double
    stale-save-kept-as-version disk-full-mode-never-left field-edits-not-logged waiting-edits-not-laid-over rows-not-caught-up-at-start)
bundle=.build/simulation/release/PlistSyncPackageTests.xctest
status=0
for mutation in "${mutations[@]}"; do
    started=$(date +%s)
    # run.sh builds the simulation first (nothing to do after the main run) and stops handing
    # out seeds after the first chunk that failed.
    output=$(PLISTSYNC_MUTATION=$mutation bash Tests/Simulation/run.sh --runs "$runs" 2>&1) || true
    seconds=$(( $(date +%s) - started ))
    first=$(grep -oE "seed [0-9]+: [0-9]+ violations" <<<"$output" | awk '{ sub(":", "", $2); print $2 }' | sort -n | head -n 1 || true)
    if [ -n "$first" ]; then
        echo "mutation $mutation: caught by the seeded runs, first at seed $first ($seconds s)"
        continue
    fi
    grep -q "^simulation:" <<<"$output" || { echo "mutation $mutation: the simulation did not run"; tail -n 20 <<<"$output"; status=1; continue; }
    scenarios=$(PLISTSYNC_MUTATION=$mutation "$bundle" SimulationTests.ScenarioTests 2>&1 || true)
    failing=$(grep -oE "ScenarioTests\.test[A-Za-z]+ : " <<<"$scenarios" | sort -u | sed 's/ : //' || true)
    if [ -n "$failing" ]; then
        echo "mutation $mutation: NOT caught by $runs seeded runs ($seconds s): a hole in their invariants; caught by the scripted scenarios: $(tr '\n' ' ' <<<"$failing")"
        status=1
    else
        echo "mutation $mutation: NOT caught, neither by $runs seeded runs nor by the scripted scenarios"
        status=1
    fi
done
exit "$status"
