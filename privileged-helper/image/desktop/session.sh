#!/bin/bash
# Grove desktop session: the container's init command, run under tini
# (PID 1 is `tini -- /usr/local/lib/grove/session.sh`; stdio already goes to
# /var/log/grove-session.log).
#
# Starts Xvnc on :0 (VNC on port 5900 and X on port 6000, no auth), openbox, the
# workspace's services (/etc/grove/services.d/*.sh), xterm, the editor and
# Chromium, then stays alive whatever its children do.
#
# Environment: GROVE_GEOMETRY (default 1280x800), GROVE_START_URL (default the
# bundled start page).
set -u

export DISPLAY=:0 HOME=/root
cd "$HOME" || cd /

log() { echo "grove-session: $(date '+%H:%M:%S') $*"; }

# On stop, let children (Chromium in particular) shut down cleanly.
on_term() {
  log "stopping"
  # shellcheck disable=SC2046 # one PID a line, each its own argument
  kill -TERM $(jobs -p) 2>/dev/null
  sleep 2
  exit 0
}
trap on_term TERM INT HUP

# The image ships an empty /etc/machine-id; if whoever started this
# workspace did not write one, make one (GLib/D-Bus clients refuse to work
# without it).
if [ ! -s /etc/machine-id ]; then
  tr -d '-' </proc/sys/kernel/random/uuid >/etc/machine-id 2>/dev/null || true
fi

geometry="${GROVE_GEOMETRY:-1280x800}"
start_url="${GROVE_START_URL:-file:///usr/local/share/grove/start.html}"
profile=/root/.config/grove-chromium

# A workspace restarted from a stopped copy may carry a stale X lock/socket
# (no other X server can run in this container's pid namespace).
rm -f /tmp/.X0-lock /tmp/.X11-unix/X0

# No GLX: with it, Xvnc and every GTK app (which probes GLX at start) load
# Mesa's software renderer and its 110 MiB libLLVM, whose relocated pages are
# ~10 MiB of private memory and ~100 mappings in each, written into every
# fork's child. Nothing here draws with OpenGL (Chromium runs --disable-gpu);
# a program that needs it gets "extension GLX missing" (docs/fork-profile.md).
# X on TCP too, for the host's Selkies stream of this desktop, which joins
# this network namespace and connects on 127.0.0.1 (X serves MIT-SHM to local
# clients only): a fork's dump closes a TCP peer outside the tree in the
# child, where an outside Unix peer would stop it (docs/stream.md). Only
# local clients pass X's access control; only root on the host reaches this
# address at all (host-firewall.ts).
log "starting Xvnc ${geometry}"
Xvnc :0 -geometry "$geometry" -depth 24 -rfbport 5900 \
  -SecurityTypes None -AlwaysShared -listen tcp -extension GLX &
xvnc_pid=$!

# Bounded wait for the X socket (15 s).
for _ in $(seq 150); do
  [ -S /tmp/.X11-unix/X0 ] && break
  if ! kill -0 "$xvnc_pid" 2>/dev/null; then
    log "Xvnc exited before its socket appeared"
    exit 1
  fi
  sleep 0.1
done
if [ ! -S /tmp/.X11-unix/X0 ]; then
  log "Xvnc socket /tmp/.X11-unix/X0 did not appear within 15 s"
  exit 1
fi
log "X display ready"

openbox &

# The workspace's own services (dev servers and the like).
for hook in /etc/grove/services.d/*.sh; do
  [ -f "$hook" ] || continue
  log "starting service $hook"
  bash "$hook" &
done

# The windows are tiled so that a person and an agent see all three at once:
# Chromium on the left two thirds, xterm top right, the editor bottom right.
width="${geometry%x*}"
height="${geometry#*x}"
side=$((width / 3))
left=$((width - side))
half=$((height / 2))

# +ut: no utmp entry. Writing one runs the setgid utmp helper (utempter), and a
# fork that catches a process of another group cannot be dumped here (CRIU
# needs CAP_SYS_RESOURCE to read its limits; this host's root lacks it).
xterm +ut -geometry "$((side / 6 - 2))x$((half / 13 - 3))-0+0" &

# The editor's preferences go to ~/.config/glib-2.0/settings/keyfile: there is
# no D-Bus session (dconf) in a workspace.
GSETTINGS_BACKEND=keyfile mousepad &

# Let xterm's and the editor's windows map first, so that Chromium's window
# usually ends up on top (bounded: 5 s, so a slow editor does not hold up
# Chromium).
for class in xterm mousepad; do
  timeout 5 xdotool search --sync --onlyvisible --class "$class" >/dev/null 2>&1 ||
    log "no $class window after 5 s"
done

# The editor goes to its tile whenever its window maps: on a loaded host that
# can take well over 5 s, and an editor left where openbox put it is not where
# people and agents expect it (bounded: 120 s).
place_editor() {
  if timeout 120 xdotool search --sync --onlyvisible --class mousepad \
    windowsize %@ "$side" "$((half - 30))" windowmove %@ "$left" "$half" >/dev/null 2>&1; then
    log "editor placed"
  else
    log "could not place the editor's window"
  fi
}
place_editor &

# Chromium's profile keeps host-name-bound singleton locks; a copy of a
# stopped workspace (new host name) would otherwise refuse to open it.
mkdir -p "$profile"
rm -f "$profile"/SingletonLock "$profile"/SingletonSocket "$profile"/SingletonCookie

# On Linux Chromium keeps its histograms in a 4 MiB file it maps shared,
# $profile/BrowserMetrics/BrowserMetrics-*.pma, whatever --disable-features
# says (it sets that file up before it reads features), and deletes it while
# mapped when no one reports metrics: every dump then copied it whole as a
# ghost file while the tree was frozen, and every restore wrote it back
# (~13 ms and ~17 ms of a fork, docs/fork-profile.md). Where that directory
# cannot be made, Chromium keeps its histograms in its own memory instead,
# so a plain file stands in its place at every start (Chromium removes it
# later, with the directory it would have been).
if [ ! -f "$profile/BrowserMetrics" ]; then
  rm -rf "$profile/BrowserMetrics"
  : >"$profile/BrowserMetrics"
fi

# Fewer processes make every fork cheaper (each is seized, recorded and
# written afresh into every child): the network service runs inside the
# browser process, and no spare renderer waits for the next site. Together
# that is 2 processes, ~20 threads, ~1400 mappings and ~36 MiB less per fork
# (docs/fork-profile.md); nothing a person sees changes, and the first visit
# to a new site starts its renderer then. The address bar's suggestions are
# drawn by Chromium's native popup instead of a web page (WebUIOmniboxPopup,
# WebUIOmniboxAimPopup): the web page needs a renderer of its own, loaded at
# start whether or not anyone types, ~50 MiB and ~800 mappings. Three
# minutes after its start Chromium rates the machine for on-device AI models
# in a service process of its own, which then stays (8 threads, ~650
# mappings); with --disable-gpu it rates it 7, "GPU blocked", so it is told
# that at once, and the service never starts.
log "starting chromium ${start_url}"
chromium \
  --no-zygote --no-sandbox --disable-dev-shm-usage --disable-gpu --in-process-gpu \
  --disable-background-networking --disable-component-update --disable-sync \
  --no-first-run --test-type --no-default-browser-check --password-store=basic \
  --disable-features=Translate,MediaRouter,SpareRendererForSitePerProcess,WebUIOmniboxPopup,WebUIOmniboxAimPopup \
  --enable-features=NetworkServiceInProcess2 \
  --user-data-dir="$profile" \
  --window-position=0,0 --window-size="$left,$height" \
  --disable-quic \
  --optimization-guide-performance-class=7 \
  "$start_url" &

# Stay alive forever, whatever the children do; no busy loop once they are
# all gone (a fresh `sleep infinity` keeps `wait` blocked).
while :; do
  sleep infinity &
  wait
done
