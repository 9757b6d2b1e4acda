#!/usr/bin/env bash
# Starts Grove on this machine on the embedded default: installs what is
# missing, starts the privileged helper (a loop-file btrfs pool under
# /var/lib/grove), builds the desktop image once, and brings up a desktop
# workspace named "desktop", and runs the supervisor app in web mode in the
# foreground (Ctrl-C stops the app; the helper and workspaces keep running).
set -euo pipefail
repo="$(cd "$(dirname "$0")" && pwd)"
step() { printf '\n==> %s\n' "$*" >&2; }

"$repo/build/host/setup.sh"

run_dir="${GROVE_RUN_DIR:-/run/grove}"
log_dir=/var/log/grove
pid_file="$run_dir/helper.pid"
grove() { "$repo/main/bin/grove" "$@"; }
# Whether the helper of the pid file runs: an exited one may stay a zombie
# where init does not reap orphans, and kill -0 would still find it.
helper_runs() {
  local pid state
  pid="$(cat "$pid_file" 2>/dev/null)" || return 1
  state="$(sed 's/.*) \(.\).*/\1/' "/proc/$pid/stat" 2>/dev/null)" || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

step "privileged helper"
if helper_runs; then
  echo "already running (pid $(cat "$pid_file"))" >&2
else
  mkdir -p "$log_dir" "$run_dir"
  "$repo/build/host/start-helper.sh" "$log_dir/helper.log" "$pid_file"
  for _ in $(seq 600); do
    grove ls >/dev/null 2>&1 && break
    helper_runs || { tail -20 "$log_dir/helper.log" >&2; exit 1; }
    sleep 0.2
  done
  echo "started (pid $(cat "$pid_file"), log $log_dir/helper.log)" >&2
fi

step "host check"
grove doctor

step "desktop image (the first build takes about 7 minutes)"
grove image build desktop

step "desktop workspace"
if grove ls --json | grep -q '"name": "desktop"'; then
  grove ws start desktop
else
  grove ws create desktop
fi
vnc_socket="$(grove ls --json | node -e 'const l=JSON.parse(require("fs").readFileSync(0,"utf8")); console.log(l.find(x=>x.name==="desktop").vncSocket)')"

step "supervisor app"
npm run --silent --prefix "$repo" build:renderer >/dev/null

cat <<MSG >&2

Grove is running.
  Desktop (VNC, no password): ${vnc_socket}    e.g. vncviewer ${vnc_socket}
                              (a socket only root and the grove group may open; or see it in the app below)
  CLI:                        $repo/main/bin/grove --help
  Helper log:                 $log_dir/helper.log
  Stop the helper:            kill \$(cat $pid_file)   (workspaces keep running and are adopted on the next start)

The app (open the URL below in a browser on this machine; it carries this launch's secret). It is
served over HTTPS with Grove's own certificate: trust $log_dir/grove-ca.pem in the browser, or accept
the warning once. Each branch's desktop shows as its Selkies stream (--stream vnc: noVNC).
MSG
exec "$repo/main/bin/grove" app --web --ca "$log_dir/grove-ca.pem" ${GROVE_APP_PORT:+--port "$GROVE_APP_PORT"}
