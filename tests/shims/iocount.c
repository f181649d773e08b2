/* LD_PRELOAD shim for the tests: counts the read and write system calls on
 * the files whose path contains $FASTIO_IOCOUNT_MATCH, and the bytes they
 * moved; at exit, appends one line to $FASTIO_IOCOUNT:
 *
 *   reads N bytes B writes N bytes B
 *
 * Calls that moved no byte (the read at the end of a file) are not counted.
 *
 * build: gcc -O2 -shared -fPIC -o iocount.so iocount.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../../fixtures/fdpath.h"

static long reads, read_bytes, writes, write_bytes;

static int matches(int fd)
{
	const char *match = getenv("FASTIO_IOCOUNT_MATCH");
	return match && *match && fd_path_contains(fd, match);
}

static void count(int fd, ssize_t n, long *calls, long *bytes)
{
	if (n > 0 && matches(fd)) {
		__sync_fetch_and_add(calls, 1);
		__sync_fetch_and_add(bytes, n);
	}
}

#define REAL(name) \
	static typeof(name) *real_##name; \
	if (!real_##name) \
		real_##name = dlsym(RTLD_NEXT, #name)

ssize_t read(int fd, void *buf, size_t len)
{
	REAL(read);
	ssize_t n = real_read(fd, buf, len);
	count(fd, n, &reads, &read_bytes);
	return n;
}

ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	REAL(pread64);
	ssize_t n = real_pread64(fd, buf, len, off);
	count(fd, n, &reads, &read_bytes);
	return n;
}

ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	REAL(readv);
	ssize_t n = real_readv(fd, iov, cnt);
	count(fd, n, &reads, &read_bytes);
	return n;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	REAL(write);
	ssize_t n = real_write(fd, buf, len);
	count(fd, n, &writes, &write_bytes);
	return n;
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	REAL(pwrite64);
	ssize_t n = real_pwrite64(fd, buf, len, off);
	count(fd, n, &writes, &write_bytes);
	return n;
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	REAL(writev);
	ssize_t n = real_writev(fd, iov, cnt);
	count(fd, n, &writes, &write_bytes);
	return n;
}

__attribute__((destructor)) static void report(void)
{
	const char *out = getenv("FASTIO_IOCOUNT");
	FILE *f;
	if (!out || !*out)
		return;
	f = fopen(out, "a");
	if (!f)
		return;
	fprintf(f, "reads %ld bytes %ld writes %ld bytes %ld\n", reads, read_bytes,
		writes, write_bytes);
	fclose(f);
}
