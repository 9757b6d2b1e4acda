/*
 * grove-spawn: starts the helper's programs for it (host/program-starter.ts).
 *
 * Node starts a program by forking the whole helper and waiting until the
 * child has called exec: that holds the helper's main thread for each
 * program (copying its page tables, then faulting its pages back in), and a
 * fork's child waits on four of them (docs/fork-profile.md). This small
 * process starts them with posix_spawn (a vfork: nothing is copied), while
 * the helper only writes a request to a pipe.
 *
 * It reads requests on stdin and writes what happens on stdout, both as
 * frames: a 32-bit length (little-endian, of what follows), then the body.
 *
 *   request   u32 id, u32 timeout_ms (0: none), u32 has_input, u32 argc,
 *             u32 envc, u32 strings_len; then strings_len bytes of
 *             NUL-terminated strings: the file, the working directory ("":
 *             ours), a path to open as the program's fd 3 (""), argc
 *             arguments (argv[0] included), envc "NAME=value" entries; then
 *             the program's input, to the end of the frame, when has_input
 *             (otherwise its stdin is /dev/null)
 *   reply     u32 id, u8 kind, then
 *             kind 1 / 2: bytes the program wrote to stdout / stderr
 *             kind 3: i32 exit code (-1 if a signal ended it), i32 the signal,
 *                     u8 timed out, then why it could not start ("" if it did)
 *
 * An exit frame comes after all of the program's output. A program that runs
 * past its timeout gets SIGTERM, and SIGKILL 5 s later. Every descriptor of
 * ours is close-on-exec; a program gets its three pipes (and fd 3 if asked),
 * default signal handling and an empty signal mask (but for glibc's two
 * internal signals, which posix_spawn leaves ignored and glibc programs take
 * over at their start). When stdin ends (the
 * helper is gone) this process exits; its programs run on, as they would
 * have after the helper's own end.
 * Built by build/host/setup.sh.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KILL_AFTER_MS 5000
#define READ_CHUNK 65536
#define MAX_FRAME (64u << 20)

enum { OUT_DATA = 1, ERR_DATA = 2, EXITED = 3 };

struct program {
	uint32_t id;
	pid_t pid; /* 0 once reaped */
	int out, err, in; /* -1 once closed */
	char *input;
	size_t input_len, input_done;
	int64_t deadline_ms; /* 0: none */
	int64_t kill_at_ms; /* 0: not yet sent SIGTERM */
	int timed_out;
	int status;
};

static struct program *programs;
static size_t nprograms, capacity;

static void die(const char *what)
{
	fprintf(stderr, "grove-spawn: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void write_all(const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		ssize_t n = write(STDOUT_FILENO, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			exit(errno == EPIPE ? 0 : 1); /* the helper is gone */
		p += n;
		len -= (size_t)n;
	}
}

static void reply(uint32_t id, uint8_t kind, const void *payload, size_t len)
{
	char head[9];
	uint32_t frame = (uint32_t)(4 + 1 + len);
	memcpy(head, &frame, 4);
	memcpy(head + 4, &id, 4);
	head[8] = (char)kind;
	write_all(head, sizeof head);
	write_all(payload, len);
}

static void reply_exit(uint32_t id, int32_t code, int32_t signal, uint8_t timed_out, const char *why)
{
	size_t why_len = strlen(why);
	char body[9 + 256];
	if (why_len > 256)
		why_len = 256;
	memcpy(body, &code, 4);
	memcpy(body + 4, &signal, 4);
	body[8] = (char)timed_out;
	memcpy(body + 9, why, why_len);
	reply(id, EXITED, body, 9 + why_len);
}

/* The program's path: FILE itself if it names a directory, else the first executable FILE on PATH (the program's own PATH, as Node looks it up). */
static int resolve(const char *file, char *const env[], char out[PATH_MAX])
{
	if (strchr(file, '/'))
		return snprintf(out, PATH_MAX, "%s", file) < PATH_MAX ? 0 : ENAMETOOLONG;
	const char *search = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (char *const *e = env; *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			search = *e + 5;
	for (const char *dir = search; *dir;) {
		size_t len = strcspn(dir, ":");
		if (len > 0 && snprintf(out, PATH_MAX, "%.*s/%s", (int)len, dir, file) < PATH_MAX && access(out, X_OK) == 0)
			return 0;
		dir += len + (dir[len] == ':');
	}
	return ENOENT;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Starts one request's program and adds it to the table; a program that cannot start gets its exit frame at once. */
static void start(uint32_t id, uint32_t timeout_ms, const char *file, const char *cwd, const char *fd3_path, char **argv, char **env,
		  const char *input, size_t input_len, int has_input)
{
	char path[PATH_MAX];
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, in[2] = { -1, -1 }, fd3 = -1;
	int failed = resolve(file, env, path);
	if (!failed && fd3_path[0] && (fd3 = open(fd3_path, O_RDONLY | O_CLOEXEC)) < 0)
		failed = errno;
	if (!failed && (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || (has_input && pipe2(in, O_CLOEXEC))))
		failed = errno;
	pid_t pid = 0;
	if (!failed) {
		posix_spawn_file_actions_t actions;
		posix_spawnattr_t attr;
		sigset_t none, all;
		sigemptyset(&none);
		sigfillset(&all);
		posix_spawn_file_actions_init(&actions);
		if (has_input)
			posix_spawn_file_actions_adddup2(&actions, in[0], 0);
		else
			posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
		posix_spawn_file_actions_adddup2(&actions, out[1], 1);
		posix_spawn_file_actions_adddup2(&actions, err[1], 2);
		if (fd3 >= 0)
			posix_spawn_file_actions_adddup2(&actions, fd3, 3);
		if (cwd[0])
			posix_spawn_file_actions_addchdir_np(&actions, cwd);
		posix_spawnattr_init(&attr);
		posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
		posix_spawnattr_setsigmask(&attr, &none);
		posix_spawnattr_setsigdefault(&attr, &all);
		failed = posix_spawn(&pid, path, &actions, &attr, argv, env);
		posix_spawn_file_actions_destroy(&actions);
		posix_spawnattr_destroy(&attr);
	}
	close_fd(&fd3);
	close_fd(&out[1]);
	close_fd(&err[1]);
	close_fd(&in[0]);
	if (failed) {
		close_fd(&out[0]);
		close_fd(&err[0]);
		close_fd(&in[1]);
		char why[300];
		snprintf(why, sizeof why, "%s (%s)", strerrorname_np(failed) ? strerrorname_np(failed) : "error", strerror(failed));
		reply_exit(id, -1, 0, 0, why);
		return;
	}
	if (nprograms == capacity) {
		capacity = capacity ? capacity * 2 : 16;
		programs = realloc(programs, capacity * sizeof *programs);
		if (!programs)
			die("realloc");
	}
	struct program *p = &programs[nprograms++];
	*p = (struct program){ .id = id, .pid = pid, .out = out[0], .err = err[0], .in = in[1], .deadline_ms = timeout_ms ? now_ms() + timeout_ms : 0 };
	if (has_input && input_len > 0) {
		p->input = malloc(input_len);
		if (!p->input)
			die("malloc");
		memcpy(p->input, input, input_len);
		p->input_len = input_len;
		fcntl(p->in, F_SETFL, O_NONBLOCK);
	} else {
		close_fd(&p->in);
	}
}

static uint32_t u32_at(const char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* Takes the NUL-terminated strings of a request apart; 0 if the count or a terminator is missing. */
static int split_strings(char *strings, size_t len, char **out, size_t count)
{
	size_t at = 0;
	for (size_t i = 0; i < count; i++) {
		char *end = memchr(strings + at, '\0', len - at);
		if (at >= len || !end)
			return 0;
		out[i] = strings + at;
		at = (size_t)(end - strings) + 1;
	}
	return at == len;
}

static void handle_request(char *body, size_t len)
{
	if (len < 24) {
		fprintf(stderr, "grove-spawn: a request of %zu bytes is too short\n", len);
		exit(1);
	}
	uint32_t id = u32_at(body), timeout_ms = u32_at(body + 4), has_input = u32_at(body + 8);
	uint32_t argc = u32_at(body + 12), envc = u32_at(body + 16), strings_len = u32_at(body + 20);
	if (strings_len > len - 24 || argc < 1 || argc > len || envc > len) {
		fprintf(stderr, "grove-spawn: a malformed request (id %u)\n", id);
		exit(1);
	}
	size_t count = 3 + (size_t)argc + envc;
	char **strings = calloc(count, sizeof *strings);
	if (!strings)
		die("calloc");
	if (!split_strings(body + 24, strings_len, strings, count)) {
		fprintf(stderr, "grove-spawn: a request's strings do not match its counts (id %u)\n", id);
		exit(1);
	}
	char **argv = calloc(argc + 1, sizeof *argv), **env = calloc(envc + 1, sizeof *env);
	if (!argv || !env)
		die("calloc");
	memcpy(argv, strings + 3, argc * sizeof *argv);
	memcpy(env, strings + 3 + argc, envc * sizeof *env);
	start(id, timeout_ms, strings[0], strings[1], strings[2], argv, env, body + 24 + strings_len, len - 24 - strings_len, has_input != 0);
	free(argv);
	free(env);
	free(strings);
}

/* Requests arrive in pieces: whole frames are handled, the rest kept. */
static void read_requests(void)
{
	static char *buf;
	static size_t used, size;
	if (size - used < READ_CHUNK) {
		size = size ? size * 2 : 2 * READ_CHUNK;
		buf = realloc(buf, size);
		if (!buf)
			die("realloc");
	}
	ssize_t n = read(STDIN_FILENO, buf + used, size - used);
	if (n < 0 && errno == EINTR)
		return;
	if (n < 0)
		die("read");
	if (n == 0)
		exit(0); /* the helper is gone */
	used += (size_t)n;
	size_t at = 0;
	while (used - at >= 4) {
		uint32_t frame = u32_at(buf + at);
		if (frame > MAX_FRAME) {
			fprintf(stderr, "grove-spawn: a request of %u bytes is too large\n", frame);
			exit(1);
		}
		if (used - at - 4 < frame)
			break;
		handle_request(buf + at + 4, frame);
		at += 4 + frame;
	}
	memmove(buf, buf + at, used - at);
	used -= at;
}

static void drain(struct program *p, int *fd, uint8_t kind)
{
	static char chunk[READ_CHUNK];
	ssize_t n = read(*fd, chunk, sizeof chunk);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0)
		close_fd(fd);
	else
		reply(p->id, kind, chunk, (size_t)n);
}

static void feed(struct program *p)
{
	ssize_t n = write(p->in, p->input + p->input_done, p->input_len - p->input_done);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < 0) /* it will not read the rest (EPIPE): as Node, not an error of ours */
		p->input_done = p->input_len;
	else
		p->input_done += (size_t)n;
	if (p->input_done == p->input_len)
		close_fd(&p->in);
}

static void reap(void)
{
	int status;
	pid_t pid;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		for (size_t i = 0; i < nprograms; i++)
			if (programs[i].pid == pid) {
				programs[i].pid = 0;
				programs[i].status = status;
				close_fd(&programs[i].in);
			}
}

/* Sends the exit frames of programs that ended and whose output is all out, and forgets them. */
static void finish(void)
{
	for (size_t i = 0; i < nprograms;) {
		struct program *p = &programs[i];
		if (p->pid != 0 || p->out >= 0 || p->err >= 0) {
			i++;
			continue;
		}
		int signaled = WIFSIGNALED(p->status);
		reply_exit(p->id, signaled ? -1 : WEXITSTATUS(p->status), signaled ? WTERMSIG(p->status) : 0, (uint8_t)p->timed_out, "");
		free(p->input);
		programs[i] = programs[--nprograms];
	}
}

/* SIGTERM at a program's deadline, SIGKILL 5 s later; returns poll's timeout until the next of them. */
static int enforce_deadlines(void)
{
	int64_t now = now_ms(), next = -1;
	for (size_t i = 0; i < nprograms; i++) {
		struct program *p = &programs[i];
		if (p->pid == 0 || p->deadline_ms == 0)
			continue;
		if (!p->timed_out && now >= p->deadline_ms) {
			p->timed_out = 1;
			p->kill_at_ms = now + KILL_AFTER_MS;
			kill(p->pid, SIGTERM);
		} else if (p->timed_out && p->kill_at_ms && now >= p->kill_at_ms) {
			p->kill_at_ms = 0;
			kill(p->pid, SIGKILL);
		}
		int64_t due = !p->timed_out ? p->deadline_ms : p->kill_at_ms;
		if (due && (next < 0 || due < next))
			next = due;
	}
	return next < 0 ? -1 : (int)(next > now ? next - now : 0);
}

int main(void)
{
	/* Whatever the helper's own starter left open without close-on-exec is no program's business. */
	close_range(3, ~0U, 0);
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, NULL))
		die("sigprocmask");
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		die("signalfd");
	signal(SIGPIPE, SIG_IGN);
	fcntl(STDIN_FILENO, F_SETFD, FD_CLOEXEC);
	fcntl(STDOUT_FILENO, F_SETFD, FD_CLOEXEC);
	struct pollfd *fds = NULL;
	struct program **owners = NULL;
	int **which = NULL;
	for (;;) {
		int timeout = enforce_deadlines();
		size_t want = 2 + 3 * nprograms, n = 0;
		fds = realloc(fds, want * sizeof *fds);
		owners = realloc(owners, want * sizeof *owners);
		which = realloc(which, want * sizeof *which);
		if (!fds || !owners || !which)
			die("realloc");
		fds[n++] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
		fds[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		for (size_t i = 0; i < nprograms; i++) {
			struct program *p = &programs[i];
			int *own[3] = { &p->out, &p->err, &p->in };
			for (int k = 0; k < 3; k++) {
				if (*own[k] < 0)
					continue;
				owners[n] = p;
				which[n] = own[k];
				fds[n++] = (struct pollfd){ .fd = *own[k], .events = k == 2 ? POLLOUT : POLLIN };
			}
		}
		if (poll(fds, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		for (size_t i = 2; i < n; i++) {
			if (!fds[i].revents)
				continue;
			struct program *p = owners[i];
			if (which[i] == &p->in)
				feed(p);
			else
				drain(p, which[i], which[i] == &p->out ? OUT_DATA : ERR_DATA);
		}
		if (fds[1].revents) {
			struct signalfd_siginfo info;
			while (read(sfd, &info, sizeof info) == sizeof info)
				;
			reap();
		}
		finish();
		/* Last: a new request may grow the table that owners[] points into. */
		if (fds[0].revents)
			read_requests();
	}
}
