#!/usr/bin/env bash
# Sets everything up and starts the server on the embedded default store:
# installs missing packages, builds a release binary, creates an admin account on first run
# (its password is printed once and kept in plistsync-data/admin-password, mode 0600),
# then runs `plistsync serve` on 127.0.0.1:7420 with data in ./plistsync-data, and the web
# console and HTTP API on http://127.0.0.1:7421/ (PLISTSYNC_HTTP=off leaves them off), letting
# invitations its admin makes create accounts (serve --invitations-make-accounts).
# PLISTSYNC_BINARY=path serves with a binary built already instead (the README test does).
set -euo pipefail
cd "$(dirname "$0")/.."

bash Deploy/install-deps.sh
binary=${PLISTSYNC_BINARY:-.build/release/plistsync}
[ -n "${PLISTSYNC_BINARY:-}" ] || bash Deploy/build-release.sh
data=${PLISTSYNC_DATA:-./plistsync-data}

if [ -z "$("$binary" user list --data "$data")" ]; then
    password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=' | head -c 20)
    printf '%s\n' "$password" | "$binary" user add admin --admin --password-stdin --data "$data"
    umask 077
    printf '%s\n' "$password" > "$data/admin-password"
    echo "first run: created user 'admin' with password $password (also in $data/admin-password)"
fi
http=()
if [ "${PLISTSYNC_HTTP:-127.0.0.1:7421}" != off ]; then
    http=(--http-listen "${PLISTSYNC_HTTP:-127.0.0.1:7421}")
    echo "web console: http://${PLISTSYNC_HTTP:-127.0.0.1:7421}/ (log in as admin)"
fi
exec "$binary" serve --data "$data" --invitations-make-accounts "${http[@]}" "$@"
