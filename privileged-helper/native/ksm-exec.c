/*
 * ksm-exec PROGRAM [ARG...]
 *
 * Marks this process's whole address space mergeable for KSM with
 * prctl(PR_SET_MEMORY_MERGE) (Linux 6.4+), then execs PROGRAM. The flag is
 * inherited over fork and kept across exec, so when the helper starts crun or
 * `criu restore` through this, every process of the workspace or of the
 * restored branch can share its unchanged anonymous pages copy-on-write with
 * its source and siblings. Node cannot call prctl itself, hence this wrapper.
 * If the kernel refuses, it says so and runs the program anyway (no sharing).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#endif

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: ksm-exec PROGRAM [ARG...]\n");
		return 2;
	}
	if (prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) != 0)
		fprintf(stderr, "ksm-exec: PR_SET_MEMORY_MERGE: %s (running without memory sharing)\n", strerror(errno));
	execvp(argv[1], argv + 1);
	fprintf(stderr, "ksm-exec: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
