/* LD_PRELOAD shim: madvise() fails EINVAL, as on a kernel that does not
 * know the advice, for each advice listed in FASTIO_MADVISE_EINVAL
 * (comma-separated numbers: 22 is MADV_POPULATE_READ, 3 MADV_WILLNEED).
 *
 * build: gcc -O2 -shared -fPIC -o madviseshim.so madviseshim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int madvise(void *addr, size_t length, int advice)
{
	static int (*real)(void *, size_t, int);
	const char *refused = getenv("FASTIO_MADVISE_EINVAL");
	if (refused != NULL) {
		char *copy = strdup(refused), *save = NULL, *item;
		for (item = strtok_r(copy, ",", &save); item != NULL;
		     item = strtok_r(NULL, ",", &save)) {
			if (atoi(item) == advice) {
				free(copy);
				errno = EINVAL;
				return -1;
			}
		}
		free(copy);
	}
	if (real == NULL)
		real = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "madvise");
	return real(addr, length, advice);
}
