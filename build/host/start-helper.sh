#!/usr/bin/env bash
# Starts the privileged helper detached and returns at once: node itself on
# the compiled helper (dist/, compiled again first when a source changed
# since: build/compile.sh), leading a session of its own (so it outlives
# whoever started it, and `grove doctor` checks just that). Its output is
# appended to LOG and its pid written to PIDFILE; the caller waits for its
# socket.
# ./start.sh and the system tests start every helper this way.
#   build/host/start-helper.sh LOG PIDFILE
# The helper's configuration comes from the environment (GROVE_*,
# privileged-helper/src/config.ts).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
log="$1" pid_file="$2"
# The log says which branches exist, who did what and why things failed:
# root and the grove group may read it, nobody else.
touch "$log"
chmod 0640 "$log"
chgrp grove "$log" 2>/dev/null || true
"$repo/build/compile.sh" --quiet
setsid node --enable-source-maps "$repo/dist/privileged-helper/src/daemon.js" </dev/null >>"$log" 2>&1 &
echo $! > "$pid_file"
