/* LD_PRELOAD shim modelling Windows' refusal to remove or rename an open file.
 *
 * unlink(), unlinkat(), rename(), renameat() and renameat2() of a regular
 * file that this process has open (same device and inode as one of the
 * descriptors in /proc/self/fd) fail with EACCES, as on Windows (a sharing
 * violation, PermissionError in Python).  A rename is refused when either
 * its source or the file it would replace is open.  Linux only; slow (a
 * walk of /proc/self/fd per call), which the tests do not mind.
 *
 * FASTIO_WINLOCK_LOG=path    append one line per refused call there
 *
 * build: gcc -O2 -shared -fPIC -o winlockshim.so winlockshim.c -ldl
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_open_here(int at, const char *path)
{
	struct stat target, st;
	DIR *d;
	struct dirent *e;
	int busy = 0;
	if (fstatat(at, path, &target, AT_SYMLINK_NOFOLLOW) != 0 ||
	    !S_ISREG(target.st_mode))
		return 0;
	d = opendir("/proc/self/fd");
	if (d == NULL)
		return 0;
	while (!busy && (e = readdir(d)) != NULL) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end ||
		    fd == dirfd(d))
			continue;
		if (fstat((int)fd, &st) == 0 && st.st_dev == target.st_dev &&
		    st.st_ino == target.st_ino)
			busy = 1;
	}
	closedir(d);
	return busy;
}

/* 1 (errno EACCES) if a call on these paths must be refused */
static int refuse(const char *call, int dirfd1, const char *path1, int dirfd2,
		  const char *path2)
{
	int saved = errno;
	int busy = is_open_here(dirfd1, path1) ||
		   (path2 != NULL && is_open_here(dirfd2, path2));
	if (busy) {
		const char *log = getenv("FASTIO_WINLOCK_LOG");
		if (log != NULL && *log) {
			FILE *f = fopen(log, "a");
			if (f != NULL) {
				fprintf(f, "%s %s%s%s: open\n", call, path1,
					path2 ? " -> " : "", path2 ? path2 : "");
				fclose(f);
			}
		}
		errno = EACCES;
		return 1;
	}
	errno = saved;
	return 0;
}

/* the next definition of `name`, with the type of the caller's own */
#define REAL(name)                                                             \
	static __typeof__(name) *real;                                         \
	if (real == NULL)                                                      \
		real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

int unlink(const char *path)
{
	REAL(unlink);
	if (refuse("unlink", AT_FDCWD, path, AT_FDCWD, NULL))
		return -1;
	return real(path);
}

int unlinkat(int dirfd, const char *path, int flags)
{
	REAL(unlinkat);
	if (!(flags & AT_REMOVEDIR) &&
	    refuse("unlinkat", dirfd, path, AT_FDCWD, NULL))
		return -1;
	return real(dirfd, path, flags);
}

int rename(const char *old, const char *new)
{
	REAL(rename);
	if (refuse("rename", AT_FDCWD, old, AT_FDCWD, new))
		return -1;
	return real(old, new);
}

int renameat(int olddirfd, const char *old, int newdirfd, const char *new)
{
	REAL(renameat);
	if (refuse("renameat", olddirfd, old, newdirfd, new))
		return -1;
	return real(olddirfd, old, newdirfd, new);
}

int renameat2(int olddirfd, const char *old, int newdirfd, const char *new,
	      unsigned int flags)
{
	REAL(renameat2);
	if (refuse("renameat2", olddirfd, old, newdirfd, new))
		return -1;
	return real(olddirfd, old, newdirfd, new, flags);
}
