#!/bin/sh
# .deb post-install: the 'grove' group (persons: they decide) and the
# 'grove-agent' group (agents: they work in branches and ask), the
# unprivileged 'grove-gate' user the egress gate runs as, and the helper's
# systemd service.
set -e
getent group grove >/dev/null 2>&1 || groupadd --system grove
getent group grove-agent >/dev/null 2>&1 || groupadd --system grove-agent
getent passwd grove-gate >/dev/null 2>&1 ||
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin grove-gate
install -m 0644 /opt/Grove/resources/helper/grove-helper.service /lib/systemd/system/grove-helper.service
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  systemctl enable --now grove-helper.service || echo "grove: the helper did not start; see 'journalctl -u grove-helper'" >&2
fi
echo "grove: add people who supervise agents to the 'grove' group (usermod -aG grove NAME)," >&2
echo "grove: and the accounts agents run as to the 'grove-agent' group (usermod -aG grove-agent NAME)" >&2
