#!/usr/bin/env bash
# Builds a release binary and installs PlistSync where the units expect it:
#   /usr/local/bin/plistsync, /etc/systemd/system/plistsync.service and plistsync-agent@.service,
#   /etc/plistsync/server.conf (kept when it exists), the README in /usr/local/share/doc/plistsync.
# Then: systemctl daemon-reload && systemctl enable --now plistsync
# PREFIX=/opt/plistsync or DESTDIR=/tmp/stage change where things go (DESTDIR: for packaging).
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=${PREFIX:-/usr/local}
destdir=${DESTDIR:-}
bash Deploy/install-deps.sh
bash Deploy/build-release.sh
sudo=""
if [ "$(id -u)" -ne 0 ] && [ -z "$destdir" ]; then sudo=sudo; fi

$sudo install -D -m 0755 .build/release/plistsync "$destdir$prefix/bin/plistsync"
$sudo install -D -m 0644 README.md "$destdir$prefix/share/doc/plistsync/README.md"
$sudo install -D -m 0644 Protocol/PROTOCOL.md "$destdir$prefix/share/doc/plistsync/PROTOCOL.md"
$sudo install -D -m 0644 Protocol/HTTP.md "$destdir$prefix/share/doc/plistsync/HTTP.md"
for unit in plistsync.service plistsync-agent@.service; do
    sed "s|/usr/local/bin/plistsync|$prefix/bin/plistsync|g" "Deploy/$unit" > "/tmp/$unit.$$"
    $sudo install -D -m 0644 "/tmp/$unit.$$" "$destdir/etc/systemd/system/$unit"
    rm -f "/tmp/$unit.$$"
done
if [ -z "$destdir" ] && ! id plistsync >/dev/null 2>&1; then
    $sudo useradd --system --home-dir /var/lib/plistsync --no-create-home --shell /usr/sbin/nologin plistsync
fi
if [ ! -e "$destdir/etc/plistsync/server.conf" ]; then
    $sudo install -D -m 0644 Deploy/server.conf.example "$destdir/etc/plistsync/server.conf"
fi
$sudo install -D -m 0644 Deploy/agent.conf.example "$destdir/etc/plistsync/agent.conf.example"
echo "installed $prefix/bin/plistsync and the units; next: systemctl daemon-reload && systemctl enable --now plistsync"
