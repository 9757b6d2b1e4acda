// inroot.node: opening a file of a branch's tree from the host as if the tree
// were the whole filesystem. The helper is root and the tree is the branch's:
// a link the branch plants, or swaps in while the helper walks a path
// (renameat2 RENAME_EXCHANGE of a folder and a link), must never lead the
// open out of the tree. openat2(RESOLVE_IN_ROOT) resolves every component,
// links and ".." included, inside the tree's root; RESOLVE_NO_MAGICLINKS
// refuses /proc/*/fd jumps; O_NOCTTY keeps a terminal node from becoming the
// helper's controlling terminal; O_NONBLOCK keeps a fifo from blocking it.
//
//   openInRoot(root, path) -> fd   (read-only; the caller closes it)
//
// Node has no openat2. Built by build/host/setup.sh: cc -shared -fPIC -I<node's include dir>.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <node_api.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_PATH 4096

static napi_value fail(napi_env env, const char *what, int err) {
  char message[160];
  snprintf(message, sizeof message, "%s: %s", what, strerror(err));
  napi_value code, msg, error;
  if (napi_create_string_utf8(env, strerrorname_np(err) ? strerrorname_np(err) : "EIO", NAPI_AUTO_LENGTH, &code) != napi_ok ||
      napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &msg) != napi_ok || napi_create_error(env, code, msg, &error) != napi_ok)
    return NULL;
  napi_throw(env, error);
  return NULL;
}

static int string_arg(napi_env env, napi_value v, char *buf) {
  size_t len;
  return napi_get_value_string_utf8(env, v, buf, MAX_PATH, &len) == napi_ok && len > 0 && len < MAX_PATH - 1;
}

static napi_value open_in_root(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  char root[MAX_PATH], rel[MAX_PATH];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 2 || !string_arg(env, argv[0], root) || !string_arg(env, argv[1], rel)) {
    napi_throw_type_error(env, NULL, "openInRoot(root, path): two non-empty paths");
    return NULL;
  }
  int dir = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return fail(env, "open root", errno);
  struct open_how how = {
    .flags = O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC,
    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
  };
  const char *inside = rel;
  while (*inside == '/') inside++;
  int fd = (int)syscall(SYS_openat2, dir, *inside ? inside : ".", &how, sizeof how);
  int err = errno;
  close(dir);
  if (fd < 0) return fail(env, "openat2", err);
  napi_value result;
  if (napi_create_int32(env, fd, &result) != napi_ok) {
    close(fd);
    return NULL;
  }
  return result;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "openInRoot", NAPI_AUTO_LENGTH, open_in_root, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "openInRoot", fn) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
