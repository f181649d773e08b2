/* LD_PRELOAD shim modelling a filesystem where close() is slow.
 *
 * close() of a regular file opened for writing sleeps for
 * $FASTIO_CLOSE_DELAY_US microseconds first (NFS, SMB, NTFS with a virus
 * scanner flush or notify on close).  Other descriptors are untouched.
 *
 * build: gcc -O2 -shared -fPIC -o closedelay.so closedelay.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int (*real_close)(int);
static long delay_us = -1;

int close(int fd)
{
	if (!real_close)
		real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
	if (delay_us < 0) {
		const char *env = getenv("FASTIO_CLOSE_DELAY_US");
		delay_us = env ? atol(env) : 0;
	}
	if (delay_us > 0) {
		int flags = fcntl(fd, F_GETFL);
		struct stat st;
		if (flags != -1 && (flags & O_ACCMODE) != O_RDONLY &&
		    fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
			struct timespec ts;
			ts.tv_sec = delay_us / 1000000;
			ts.tv_nsec = (delay_us % 1000000) * 1000;
			nanosleep(&ts, NULL);
		}
	}
	return real_close(fd);
}
