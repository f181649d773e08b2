/* Shared by the LD_PRELOAD shims (bench/latency.c, tests/iocount.c). */
#ifndef FASTIO_FDPATH_H
#define FASTIO_FDPATH_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* whether the path descriptor fd is open on contains match */
static int fd_path_contains(int fd, const char *match)
{
	char link[64], path[4096];
	ssize_t n;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = 0;
	return strstr(path, match) != NULL;
}

#endif
