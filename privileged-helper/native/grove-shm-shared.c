// Preloaded into a branch's Selkies streamer (privileged-helper/src/stream/).
// The streamer reaches the branch's X server over TCP, so that a fork's dump
// sees an outside TCP peer it closes in the child rather than an outside Unix
// peer CRIU refuses. Over TCP the X server cannot learn the client's uid, and
// MIT-SHM then attaches only segments every uid may read and write. pixelflux
// makes its capture segments 0600; this widens the private ones it makes to
// 0666. They live in the branch's own IPC namespace, so "every uid" is the
// branch, which owns that screen anyway.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <sys/ipc.h>
#include <sys/shm.h>

int shmget(key_t key, size_t size, int flags) {
  static int (*real_shmget)(key_t, size_t, int);
  if (real_shmget == NULL) real_shmget = (int (*)(key_t, size_t, int))dlsym(RTLD_NEXT, "shmget");
  if (key == IPC_PRIVATE) flags |= 0666;
  return real_shmget(key, size, flags);
}
