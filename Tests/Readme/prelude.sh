# Sourced by the script ReadmeTests builds from README.md's shell examples. The examples run as
# written, in order, one line a step; these helpers stand in for the person at the keyboard:
# typing a password at a prompt, leaving a long-running command open in another terminal,
# an editor. Every variable an example sets is exported (a prompt runs under script(1)).
set -a
set -uo pipefail
README_PORT=7420
README_PASSWORD=wonderland
README_PIDS=()
declare -A README_COMMANDS=()
declare -A README_JOBS=()

readme_cleanup() {
    for pid in "${README_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    wait 2>/dev/null
}
trap readme_cleanup EXIT
trap 'exit 143' TERM INT

# A step of the README: the line as written.
readme_step() { printf '\n$ %s\n' "$1"; }

readme_failed() {
    local status=$1 line=$2
    printf 'README STEP FAILED (exit %s): %s\n' "$status" "$line"
    for log in "$README_LOGS"/*.log; do [ -e "$log" ] && { echo "--- $log"; tail -n 30 "$log"; }; done
    exit 1
}

readme_deadline() { echo $(( $(date +%s) + $1 )); }

# A command that keeps running (the server, the agent): started as in a terminal of its own.
readme_start() {
    local name=$1 line=$2 log="$README_LOGS/$1.log"
    README_COMMANDS[$name]=$line
    touch "$log"
    local seen; seen=$(wc -l < "$log")
    bash -c "$line" >> "$log" 2>&1 &
    README_JOBS[$name]=$!
    README_PIDS+=($!)
    case $name in
        server) readme_wait_for "the server to listen on $README_PORT" readme_server_answers ;;
        agent)
            readme_wait_for "the agent to connect" bash -c "tail -n +$((seen + 1)) '$log' | grep -q 'connected to'" &&
                readme_wait_for "the agent's collections on the server" readme_collections_on_server ;;
    esac
}

readme_stop() {
    kill "${README_JOBS[$1]}" 2>/dev/null
    wait "${README_JOBS[$1]}" 2>/dev/null
    return 0
}

# Stopped and started again with the same command (what "(re)start the agent" asks), once
# what the agent had to send is sent (a person does not restart it within a second of a change).
readme_restart() {
    [ "$1" != agent ] || readme_wait_for "the agent to send what it has" readme_agent_sent_everything
    readme_stop "$1"
    readme_start "$1" "${README_COMMANDS[$1]}"
}

# Every collection the agent mirrors (folders of ~/Sync, attached files) is on the server: the
# agent has made the new ones, as it does within a second of starting.
readme_collections_on_server() {
    local listed wanted
    listed=$("$README_PLISTSYNC" ls 2>/dev/null) || return 1
    wanted=$(find "$HOME/Sync" -mindepth 1 -maxdepth 1 -type d ! -name '.*' ! -name '*~conflicts' -printf '%f\n'
             [ -f "$HOME/Sync/.plistsync/files.plist" ] &&
                 grep -A1 '<key>collection</key>' "$HOME/Sync/.plistsync/files.plist" | sed -n 's/.*<string>\(.*\)<\/string>.*/\1/p')
    for name in $wanted; do grep -qw -- "$name" <<< "$listed" || return 1; done
}

readme_agent_sent_everything() { grep -q '"pending":0[,}]' "$HOME/Sync/.plistsync/status.json"; }

readme_server_answers() { (exec 3<>"/dev/tcp/127.0.0.1/$README_PORT") 2>/dev/null; }

# Polls a condition for up to 60 s.
readme_wait_for() {
    local what=$1; shift
    local deadline; deadline=$(readme_deadline 60)
    until "$@"; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            printf 'README: gave up waiting for %s\n' "$what"
            return 1
        fi
        sleep 0.1
    done
}

# A command that asks for a password (twice for a new one) on its terminal: typed.
readme_type_password() {
    printf '%s\n%s\n' "$README_PASSWORD" "$README_PASSWORD" | script -qec "$1" /dev/null
}

# The editor the examples open: the person types a contact and saves.
readme_editor() {
    cat > "$1" <<'PLIST'
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>name</key>
	<string>Ada Lovelace</string>
	<key>phone</key>
	<string>555-0100</string>
</dict>
</plist>
PLIST
}

# Before the conflict examples: Ada's phone changed here while the agent was stopped and on
# the server meanwhile, so the agent's next start merges them into a conflict copy.
readme_make_a_conflict() {
    local dir=$HOME/Sync
    readme_wait_for "Ada on the server" bash -c '"$README_PLISTSYNC" get contacts Ada >/dev/null 2>&1'
    readme_stop agent
    sed -i 's/555-0100/555-0111/' "$dir/contacts/Ada.plist"
    "$README_PLISTSYNC" put contacts Ada '{"name":"Ada Lovelace","phone":"555-0122"}' || return 1
    readme_start agent "${README_COMMANDS[agent]}"
    readme_wait_for "a conflict copy of Ada" bash -c 'ls "$HOME/Sync/contacts" | grep -q "^Ada.sync-conflict-"'
}
