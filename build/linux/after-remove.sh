#!/bin/sh
# .deb post-remove: stop and remove the helper's service. Workspaces, images
# and the pool under /var/lib/grove are kept (remove them with the helper's --purge).
set -e
if [ -d /run/systemd/system ]; then
  systemctl disable --now grove-helper.service 2>/dev/null || true
fi
rm -f /lib/systemd/system/grove-helper.service
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
