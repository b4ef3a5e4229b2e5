/* SPDX-License-Identifier: MIT */
/*
 * core/threads.c - when a helper thread is worth starting.
 *
 * One policy for every place that may use a second thread (the Heph scan
 * in two halves, the two-thread dump pipeline): the caller's `threads`
 * option first, then the WEFT_THREADS environment variable, then the
 * machine (more than one CPU) and the size of the work.
 */
#include <stdlib.h>
#include <unistd.h>

#include "core/internal.h"

long weft__threads_from_environment(void)
{
	const char *env = getenv("WEFT_THREADS");
	char *end;

	if (env == NULL || *env == '\0')
		return 0;
	long n = strtol(env, &end, 10);
	return *end == '\0' && n > 0 ? n : 0;
}

int weft__helper_wanted(int threads, uint64_t bytes, uint64_t worth_bytes)
{
	long asked = threads > 0 ? threads : weft__threads_from_environment();
	if (asked > 0)
		return asked >= 2;
	return sysconf(_SC_NPROCESSORS_ONLN) > 1 && bytes >= worth_bytes;
}
