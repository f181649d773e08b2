/* LD_PRELOAD shim: make write() or close() fail, or close() hang, on chosen
 * files.
 *
 * FASTIO_FAIL_CLOSE=substring   close() of a file opened for writing whose
 *                               path contains it closes, then fails ENOSPC
 *                               (or the errno $FASTIO_FAIL_CLOSE_ERRNO)
 * FASTIO_FAIL_WRITE=substring   write() to such a file fails ENOSPC
 * FASTIO_HANG_CLOSE=substring   close() of such a file first sleeps (a
 *                               hard-mounted NFS server that stopped
 *                               answering): $FASTIO_HANG_S seconds (60),
 *                               or until the file $FASTIO_HANG_RELEASE
 *                               exists; it creates $FASTIO_HANG_STARTED
 *                               when it starts (for tests that wait for it)
 * FASTIO_KILL_AFTER_CREATE=suffix  the process is killed (SIGKILL) right
 *                               after a file whose path ends with it is
 *                               created by open(O_CREAT), on any thread:
 *                               the worst moment for a writer that
 *                               journals a file only after creating it
 *
 * build: gcc -O2 -shared -fPIC -o faultshim.so faultshim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int matches(int fd, const char *var)
{
	const char *pattern = getenv(var);
	char link[64], path[4096];
	ssize_t n;
	int flags;
	if (!pattern || !*pattern)
		return 0;
	flags = fcntl(fd, F_GETFL);
	if (flags == -1 || (flags & O_ACCMODE) == O_RDONLY)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	return strstr(path, pattern) != NULL;
}

static void hang(int (*real_close)(int))
{
	const char *started = getenv("FASTIO_HANG_STARTED");
	const char *release = getenv("FASTIO_HANG_RELEASE");
	const char *limit = getenv("FASTIO_HANG_S");
	long ticks = (long)((limit && *limit ? atof(limit) : 60) * 100);
	struct timespec tick = {0, 10 * 1000 * 1000};
	if (started && *started) {
		int m = open(started, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (m >= 0)
			real_close(m);
	}
	while (ticks-- > 0 && !(release && *release && access(release, F_OK) == 0))
		nanosleep(&tick, NULL);
}

int close(int fd)
{
	static int (*real_close)(int);
	int fail;
	if (!real_close)
		real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
	if (matches(fd, "FASTIO_HANG_CLOSE"))
		hang(real_close);
	fail = matches(fd, "FASTIO_FAIL_CLOSE");
	if (real_close(fd) != 0)
		return -1;
	if (fail) {
		const char *err = getenv("FASTIO_FAIL_CLOSE_ERRNO");
		errno = err && *err ? atoi(err) : ENOSPC;
		return -1;
	}
	return 0;
}

ssize_t write(int fd, const void *buf, size_t count)
{
	static ssize_t (*real_write)(int, const void *, size_t);
	if (!real_write)
		real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (matches(fd, "FASTIO_FAIL_WRITE")) {
		errno = ENOSPC;
		return -1;
	}
	return real_write(fd, buf, count);
}

static void kill_after_create(const char *path, int flags, int fd)
{
	const char *suffix = getenv("FASTIO_KILL_AFTER_CREATE");
	size_t n, m;
	if (fd < 0 || !(flags & O_CREAT) || !suffix || !*suffix)
		return;
	n = strlen(path);
	m = strlen(suffix);
	if (n >= m && strcmp(path + n - m, suffix) == 0)
		kill(getpid(), SIGKILL);
}

#define OPEN_WRAPPER(name, params, args)                                      \
	int name params                                                      \
	{                                                                    \
		static int(*real) params;                                    \
		va_list ap;                                                  \
		mode_t mode = 0;                                             \
		int fd;                                                      \
		if (!real)                                                   \
			real = (int(*) params)dlsym(RTLD_NEXT, #name);       \
		va_start(ap, flags);                                         \
		if (flags & (O_CREAT | O_TMPFILE))                           \
			mode = va_arg(ap, mode_t);                           \
		va_end(ap);                                                  \
		fd = real args;                                              \
		kill_after_create(path, flags, fd);                          \
		return fd;                                                   \
	}

OPEN_WRAPPER(open, (const char *path, int flags, ...), (path, flags, mode))
OPEN_WRAPPER(open64, (const char *path, int flags, ...), (path, flags, mode))
OPEN_WRAPPER(openat, (int dirfd, const char *path, int flags, ...),
	     (dirfd, path, flags, mode))
OPEN_WRAPPER(openat64, (int dirfd, const char *path, int flags, ...),
	     (dirfd, path, flags, mode))
