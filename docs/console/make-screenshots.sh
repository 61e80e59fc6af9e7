#!/usr/bin/env bash
# Makes the console's screenshots in this folder (desktop 1280x800 and phone 390x844, each view)
# from a throwaway server with an inventory, a conflict copy and a few devices.
# Needs a built plistsync (swift build) and chromium, chromium-driver, python3-selenium.
# The offline ones (edits waiting, the merged conflict) come from the offline browser test:
#   PLISTSYNC_SCREENSHOTS=$PWD/docs/console swift test --filter testEditsMadeOffline
set -euo pipefail
cd "$(dirname "$0")/../.."
binary=${PLISTSYNC_BINARY:-.build/debug/plistsync}
data=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$data"' EXIT
echo wonderland | "$binary" user add alice --password-stdin --iterations 1000 --data "$data" > /dev/null
"$binary" serve --data "$data" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --port-file "$data/port" --quiet &
server=$!
for _ in $(seq 100); do [ -s "$data/port" ] && break; sleep 0.1; done
url=http://127.0.0.1:$(cat "$data/port.http")
login() { curl -s "$url/api/login" -H 'Content-Type: application/json' -d "{\"user\":\"alice\",\"password\":\"wonderland\",\"label\":\"$1\"}" | sed 's/.*"token":"\([^"]*\)".*/\1/'; }
token=$(login "alice's laptop (agent)")
login "alice's phone" > /dev/null
api() { curl -s -o /dev/null -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }
api "$url/api/collections" -d '{"name":"inventory"}'
put() { api -X PUT "$url/api/collections/inventory/records/$1" -H 'If-None-Match: *' -d "$2"; }
put laptop '{"name":"Laptop","serial":"SN-1042","value":1200,"created":{"$date":"2024-05-01T09:30:00Z"},"insured":true}'
put desk%20lamp '{"name":"Desk lamp","serial":"SN-2210","value":35.5,"created":{"$date":"2023-11-12T16:05:00Z"},"insured":false}'
put monitor '{"name":"Monitor 27\"","serial":"SN-3318","value":329.99,"created":{"$date":"2024-02-20T10:00:00Z"},"insured":true}'
put chair '{"name":"Office chair","serial":"SN-0457","value":410,"created":{"$date":"2022-08-03T08:15:00Z"},"insured":false}'
put printer '{"name":"Printer","serial":"SN-7781","value":149,"created":{"$date":"2021-01-09T12:00:00Z"},"insured":false}'
api -X PUT "$url/api/collections/inventory~conflicts/records/chair.sync-conflict-20261201-101500-laptop" -H 'If-None-Match: *' \
    -d '{"name":"Office chair","serial":"SN-0457","value":380,"created":{"$date":"2022-08-03T08:15:00Z"},"insured":false}'
/usr/bin/python3 Tests/Browser/console.py screenshots "$url/" "$(cat "$data/port")" alice wonderland inventory docs/console
