#!/usr/bin/env bash
# Builds the libFuzzer harnesses (swiftc -sanitize=fuzzer,address) and runs each for SECONDS
# (default 30) on a copy of its seed corpus. Exits non-zero, naming the crashing input, when a
# harness traps, leaks past its limits or breaks its round-trip property.
#
#   bash Tests/Fuzz/run.sh            # 30 s each
#   bash Tests/Fuzz/run.sh 3600       # an hour each, the way to run them long
#   FUZZ_TARGETS="json" bash Tests/Fuzz/run.sh 60
#
# The harnesses compile the modules' own sources into one executable (their `import` lines of
# each other are dropped), so they test exactly the code the product ships.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-30}
targets=${FUZZ_TARGETS:-"line json xml-plist binary-plist"}
work=${FUZZ_WORK:-.build/fuzz}
mkdir -p "$work"

sources_for() {
    case $1 in
        line) echo "Sources/SyncProtocol/*.swift Sources/SyncCore/*.swift Tests/Fuzz/LineFuzz.swift" ;;
        json) echo "Sources/SyncProtocol/*.swift Tests/Fuzz/JSONFuzz.swift" ;;
        xml-plist) echo "Sources/SyncProtocol/*.swift Sources/PlistFormat/*.swift Tests/Fuzz/PlistRoundTrip.swift Tests/Fuzz/XMLPlistFuzz.swift" ;;
        binary-plist) echo "Sources/SyncProtocol/*.swift Sources/PlistFormat/*.swift Tests/Fuzz/PlistRoundTrip.swift Tests/Fuzz/BinaryPlistFuzz.swift" ;;
        *) echo "unknown fuzz target $1" >&2; exit 64 ;;
    esac
}

# Other projects' plists join the seed corpora when their Debian packages are there (Deploy/test.sh
# installs them): CPython's test_plistlib, the Rust plist crate's test files, biplist, libplist.
outside="$work/outside"
rm -rf "$outside"
mkdir -p "$outside/xml-plist" "$outside/binary-plist"
if /usr/bin/python3 Tests/Fidelity/outside_plists.py harvest "$outside/all" > /dev/null 2>&1; then
    for file in "$outside/all"/*.plist; do
        if [ "$(head -c 8 "$file")" = "bplist00" ]; then cp "$file" "$outside/binary-plist/"; else cp "$file" "$outside/xml-plist/"; fi
    done
    echo "fuzz: $(ls "$outside/xml-plist" | wc -l) XML and $(ls "$outside/binary-plist" | wc -l) binary plists from other projects join the seeds"
fi

status=0
for target in $targets; do
    src="$work/$target-src"
    rm -rf "$src"
    mkdir -p "$src" "$work/$target-corpus" "$work/$target-artifacts"
    for file in $(sources_for "$target"); do
        sed -E '/^import (SyncProtocol|SyncCore|PlistFormat)$/d' "$file" > "$src/$(basename "$(dirname "$file")")-$(basename "$file")"
    done
    binary="$work/fuzz-$target"
    swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name "Fuzz" "$src"/*.swift -o "$binary" 2>&1 \
        | grep -v "Cannot export local symbol" || true
    log="$work/$target.log"
    echo "== fuzz $target for ${seconds}s"
    seeds=("Tests/Fuzz/corpus/$target")
    [ ! -d "$outside/$target" ] || seeds+=("$outside/$target")
    if "$binary" "$work/$target-corpus" "${seeds[@]}" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/$target-artifacts/" > "$log" 2>&1; then
        execs=$(grep -E "^stat::number_of_executed_units" "$log" | awk '{print $2}')
        rate=$(grep -E "^stat::average_exec_per_sec" "$log" | awk '{print $2}')
        echo "fuzz $target: ${execs:-?} execs, ${rate:-?} execs/s, no failure"
    else
        status=1
        echo "fuzz $target FAILED; the input is in $work/$target-artifacts/ and the log says:" >&2
        grep -E "ERROR|SUMMARY|Fatal error|precondition|artifact" "$log" | head -20 >&2
        grep -A6 -E '^Thread [0-9]+ .*crashed:' "$log" | head -8 >&2 || true
    fi
done
exit $status
