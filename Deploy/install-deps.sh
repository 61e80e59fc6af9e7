#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages PlistSync builds against, when any is missing, plus any
# named as arguments (the tests add the tools they drive: openssl, systemd-analyze).
# Safe to run again: it does nothing when everything is there.
set -euo pipefail

packages=(libuv1-dev libsqlite3-dev libssl-dev libpq-dev libhttp-parser-dev pkg-config "$@")
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing: ${missing[*]}"
    $sudo apt-get update -qq
    # A package with a daemon (postgresql) would start a system-wide one: the tests start their
    # own on their own ports, so a policy forbids it while installing (unless the machine has one).
    policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" > /dev/null && $sudo chmod 755 "$policy"
    fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    [ -z "$policy" ] || $sudo rm -f "$policy"
fi
command -v swift >/dev/null || { echo "the Swift toolchain (swift) is not on PATH; install it from swift.org first" >&2; exit 1; }
