#!/bin/sh
# CRIU's action script in the guest's fork test (fork_test.c): hands every
# action to the test program and succeeds only if it answers "ok".
echo "$CRTOOLS_SCRIPT_ACTION ${CRTOOLS_INIT_PID:-0}" > /tmp/action.request
read -r answer < /tmp/action.answer
[ "$answer" = ok ]
