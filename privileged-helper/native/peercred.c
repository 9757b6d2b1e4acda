// peercred.node: the kernel's word on who is at the other end of a Unix
// socket. Node has no API for SO_PEERCRED, and the helper's authority rests on
// it: a connection's role (person or agent) comes from these credentials,
// never from what the client says about itself.
//
//   peerCredentials(fd) -> { pid, uid, gid, groups: number[] }
//
// SO_PEERCRED gives the peer's pid, uid and gid as they were at connect(2);
// SO_PEERGROUPS (Linux 4.13+) its supplementary groups at that same moment, so
// a group the process dropped (setpriv --clear-groups, newgrp) is not counted.
// Built by build/host/setup.sh: cc -shared -fPIC -I/usr/include/node.
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <node_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

static napi_value fail(napi_env env, const char *what, int err) {
  char message[160];
  snprintf(message, sizeof message, "%s: %s", what, strerror(err));
  napi_throw_error(env, "E_HOST", message);
  return NULL;
}

static napi_value set_number(napi_env env, napi_value obj, const char *key, double value) {
  napi_value v;
  if (napi_create_double(env, value, &v) != napi_ok || napi_set_named_property(env, obj, key, v) != napi_ok) return NULL;
  return obj;
}

static napi_value peer_credentials(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t fd;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 1 || napi_get_value_int32(env, argv[0], &fd) != napi_ok) {
    napi_throw_type_error(env, NULL, "peerCredentials(fd): fd must be a number");
    return NULL;
  }

  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return fail(env, "SO_PEERCRED", errno);

  // NGROUPS_MAX is 65536: ask for the size first, then for the list.
  gid_t *groups = NULL;
  socklen_t glen = 0;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, NULL, &glen) != 0 && errno != ERANGE) return fail(env, "SO_PEERGROUPS", errno);
  if (glen > 0) {
    groups = malloc(glen);
    if (groups == NULL) return fail(env, "SO_PEERGROUPS", ENOMEM);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) != 0) {
      int err = errno;
      free(groups);
      return fail(env, "SO_PEERGROUPS", err);
    }
  }

  napi_value result, list;
  size_t count = glen / sizeof(gid_t);
  if (napi_create_object(env, &result) != napi_ok || napi_create_array_with_length(env, count, &list) != napi_ok) {
    free(groups);
    return NULL;
  }
  for (size_t i = 0; i < count; i++) {
    napi_value g;
    if (napi_create_double(env, groups[i], &g) != napi_ok || napi_set_element(env, list, (uint32_t)i, g) != napi_ok) {
      free(groups);
      return NULL;
    }
  }
  free(groups);
  if (!set_number(env, result, "pid", cred.pid) || !set_number(env, result, "uid", cred.uid) || !set_number(env, result, "gid", cred.gid)) return NULL;
  if (napi_set_named_property(env, result, "groups", list) != napi_ok) return NULL;
  return result;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "peerCredentials", NAPI_AUTO_LENGTH, peer_credentials, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "peerCredentials", fn) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
