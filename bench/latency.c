/* LD_PRELOAD shim modelling a filesystem whose operations are round trips
 * (NFS, SMB shares, NTFS with a virus scanner).
 *
 * Each variable is a delay in microseconds, slept before the real call:
 *
 *   FASTIO_DELAY_CREATE_US  open/openat/creat with O_CREAT
 *   FASTIO_DELAY_MKDIR_US   mkdir/mkdirat
 *   FASTIO_CLOSE_DELAY_US   close of a regular file opened for writing
 *   FASTIO_DELAY_READ_US    read/pread of a regular file
 *   FASTIO_DELAY_WRITE_US   write/pwrite of a regular file
 *
 * FASTIO_DELAY_PATH, when set, limits the read and write delays to the
 * files whose path contains it (a bundle on a share, the repository local).
 *
 * The delays are sleeps, so they overlap across threads as a server's round
 * trips do.  Other descriptors (pipes, sockets, terminals) are untouched.
 *
 * build: gcc -O2 -shared -fPIC -o latency.so latency.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "fdpath.h"

enum { CREATE, MKDIR, CLOSE, READ, WRITE, KINDS };
static const char *names[KINDS] = {
	"FASTIO_DELAY_CREATE_US", "FASTIO_DELAY_MKDIR_US",
	"FASTIO_CLOSE_DELAY_US",  "FASTIO_DELAY_READ_US",
	"FASTIO_DELAY_WRITE_US",
};
static long delays[KINDS];
static int loaded;

static void load(void)
{
	int i;
	for (i = 0; i < KINDS; i++) {
		const char *env = getenv(names[i]);
		delays[i] = env ? atol(env) : 0;
	}
	loaded = 1;
}

static void pause_for(int kind)
{
	struct timespec ts;
	long us;
	if (!loaded)
		load();
	us = delays[kind];
	if (us <= 0)
		return;
	ts.tv_sec = us / 1000000;
	ts.tv_nsec = (us % 1000000) * 1000;
	nanosleep(&ts, NULL);
}

static int delayed(int kind)
{
	if (!loaded)
		load();
	return delays[kind] > 0;
}

static int regular(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

/* a regular file, and one FASTIO_DELAY_PATH names if it is set */
static int io_target(int fd)
{
	const char *match = getenv("FASTIO_DELAY_PATH");
	if (!regular(fd))
		return 0;
	return !match || !*match || fd_path_contains(fd, match);
}

#define REAL(type, name, args)                                                 \
	static type(*real_##name) args;                                        \
	if (!real_##name)                                                      \
		real_##name = (type(*) args)dlsym(RTLD_NEXT, #name)

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	REAL(int, open, (const char *, int, ...));
	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	if (flags & O_CREAT)
		pause_for(CREATE);
	return real_open(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	REAL(int, open64, (const char *, int, ...));
	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	if (flags & O_CREAT)
		pause_for(CREATE);
	return real_open64(path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	REAL(int, openat, (int, const char *, int, ...));
	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	if (flags & O_CREAT)
		pause_for(CREATE);
	return real_openat(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	REAL(int, openat64, (int, const char *, int, ...));
	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	if (flags & O_CREAT)
		pause_for(CREATE);
	return real_openat64(dirfd, path, flags, mode);
}

int creat(const char *path, mode_t mode)
{
	REAL(int, creat, (const char *, mode_t));
	pause_for(CREATE);
	return real_creat(path, mode);
}

int mkdir(const char *path, mode_t mode)
{
	REAL(int, mkdir, (const char *, mode_t));
	pause_for(MKDIR);
	return real_mkdir(path, mode);
}

int mkdirat(int dirfd, const char *path, mode_t mode)
{
	REAL(int, mkdirat, (int, const char *, mode_t));
	pause_for(MKDIR);
	return real_mkdirat(dirfd, path, mode);
}

int close(int fd)
{
	REAL(int, close, (int));
	if (delayed(CLOSE)) {
		int flags = fcntl(fd, F_GETFL);
		if (flags != -1 && (flags & O_ACCMODE) != O_RDONLY && regular(fd))
			pause_for(CLOSE);
	}
	return real_close(fd);
}

ssize_t read(int fd, void *buf, size_t count)
{
	REAL(ssize_t, read, (int, void *, size_t));
	if (delayed(READ) && io_target(fd))
		pause_for(READ);
	return real_read(fd, buf, count);
}

ssize_t pread64(int fd, void *buf, size_t count, off_t offset)
{
	REAL(ssize_t, pread64, (int, void *, size_t, off_t));
	if (delayed(READ) && io_target(fd))
		pause_for(READ);
	return real_pread64(fd, buf, count, offset);
}

ssize_t write(int fd, const void *buf, size_t count)
{
	REAL(ssize_t, write, (int, const void *, size_t));
	if (delayed(WRITE) && io_target(fd))
		pause_for(WRITE);
	return real_write(fd, buf, count);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset)
{
	REAL(ssize_t, pwrite64, (int, const void *, size_t, off_t));
	if (delayed(WRITE) && io_target(fd))
		pause_for(WRITE);
	return real_pwrite64(fd, buf, count, offset);
}
