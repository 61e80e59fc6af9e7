# Sourced by Benchmarks/run: starts each peer from its Debian package on 127.0.0.1 with a
# throwaway folder under $work, adding every daemon's pid to the `pids` array for cleanup.
# Ports: Redis 17601, NATS 17602, PostgreSQL 17603, etcd 17604 (+17605 raft), Syncthing REST
# 17611/17612 and sync 17621/17622.

start_redis() {
    mkdir -p "$work/redis"
    # Durable like PlistSync: every write is in the append-only file and fsynced before the reply.
    redis-server --port 17601 --bind 127.0.0.1 --dir "$work/redis" --appendonly yes --appendfsync always \
        --save "" --protected-mode no --daemonize no > "$work/redis.log" 2>&1 &
    pids+=($!)
}

start_nats() {
    nats-server -a 127.0.0.1 -p 17602 > "$work/nats.log" 2>&1 &
    pids+=($!)
}

# PostgreSQL refuses to run as root: its throwaway cluster belongs to the postgres user.
start_postgres() {
    pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
    chmod 755 "$work"
    mkdir "$work/pg" && chown postgres "$work/pg" && chmod 700 "$work/pg"
    runuser -u postgres -- "$pgbin/initdb" -D "$work/pg" -A trust -U bench > "$work/initdb.log"
    runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg/server.log" -w \
        -o "-p 17603 -k $work/pg -c listen_addresses=127.0.0.1 -c synchronous_commit=on -c fsync=on -c max_connections=300" start > /dev/null
    psql -q -h 127.0.0.1 -p 17603 -U bench -d postgres -c "CREATE TABLE kv (k text PRIMARY KEY, v text)"
}

stop_postgres() {
    [ -d "$work/pg" ] && runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" -m immediate stop > /dev/null 2>&1 || true
}

# A single etcd node with default durability (each put raft-committed and its WAL fsynced).
start_etcd() {
    etcd --name bench --data-dir "$work/etcd" \
        --listen-client-urls http://127.0.0.1:17604 --advertise-client-urls http://127.0.0.1:17604 \
        --listen-peer-urls http://127.0.0.1:17605 --initial-advertise-peer-urls http://127.0.0.1:17605 \
        --initial-cluster bench=http://127.0.0.1:17605 > "$work/etcd.log" 2>&1 &
    pids+=($!)
    local tries=0
    until curl -sf http://127.0.0.1:17604/health | grep -q true; do
        sleep 0.2; tries=$((tries + 1))
        [ "$tries" -lt 150 ] || { echo "etcd did not start; see $work/etcd.log" >&2; return 1; }
    done
}

# Two Syncthing instances, A and B, sharing folder "plists" over 127.0.0.1 with the file
# watcher at its minimum delay (fsWatcherDelayS=1). Sets ST_A_SHARE, ST_B_SHARE, ST_A_REST,
# ST_KEY once both are connected and the folder is idle.
start_syncthing_pair() {
    local side ids=() index=0
    ST_KEY=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
    export STNOUPGRADE=1 STNORESTART=1 STNODEFAULTFOLDER=1
    for side in a b; do
        syncthing generate --home="$work/st-$side" --no-default-folder --skip-port-probing > /dev/null 2>&1
        ids+=("$(syncthing serve --home="$work/st-$side" --device-id | tail -n 1)")
    done
    for side in a b; do
        local home="$work/st-$side"
        mkdir -p "$home/share/.stfolder"
        # Atomic savers write a temporary next to the file; it is not content to sync.
        printf '.*.tmp\n' > "$home/share/.stignore"
        # A whole config: loopback only; discovery, relays, NAT, reporting and upgrades off;
        # every setting not named keeps Syncthing's default.
        cat > "$home/config.xml" <<XML
<configuration version="36">
    <folder id="plists" label="plists" path="$home/share" type="sendreceive" rescanIntervalS="86400" fsWatcherEnabled="true" fsWatcherDelayS="1">
        <device id="${ids[0]}"></device>
        <device id="${ids[1]}"></device>
    </folder>
    <device id="${ids[0]}" name="A"><address>tcp://127.0.0.1:17621</address></device>
    <device id="${ids[1]}" name="B"><address>tcp://127.0.0.1:17622</address></device>
    <gui enabled="true" tls="false"><address>127.0.0.1:$((17611 + index))</address><apikey>$ST_KEY</apikey></gui>
    <options>
        <listenAddress>tcp://127.0.0.1:$((17621 + index))</listenAddress>
        <globalAnnounceEnabled>false</globalAnnounceEnabled>
        <localAnnounceEnabled>false</localAnnounceEnabled>
        <relaysEnabled>false</relaysEnabled>
        <natEnabled>false</natEnabled>
        <urAccepted>-1</urAccepted>
        <crashReportingEnabled>false</crashReportingEnabled>
        <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
        <startBrowser>false</startBrowser>
        <setLowPriority>false</setLowPriority>
        <reconnectionIntervalS>1</reconnectionIntervalS>
        <stunKeepaliveStartS>0</stunKeepaliveStartS>
        <stunKeepaliveMinS>0</stunKeepaliveMinS>
    </options>
</configuration>
XML
        syncthing serve --home="$home" --no-browser --no-restart --no-upgrade > "$work/syncthing-$side.log" 2>&1 &
        pids+=($!)
        index=$((index + 1))
    done
    ST_A_SHARE="$work/st-a/share" ST_B_SHARE="$work/st-b/share" ST_A_REST=127.0.0.1:17611
    local tries=0
    until curl -sf -H "X-API-Key: $ST_KEY" "http://$ST_A_REST/rest/system/connections" | grep -q '"connected": *true' &&
        curl -sf -H "X-API-Key: $ST_KEY" "http://$ST_A_REST/rest/db/status?folder=plists" | grep -q '"state": *"idle"'; do
        sleep 0.5; tries=$((tries + 1))
        [ "$tries" -lt 240 ] || { echo "Syncthing A and B did not connect; see $work/syncthing-*.log" >&2; return 1; }
    done
}
