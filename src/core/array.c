/* SPDX-License-Identifier: MIT */
/*
 * core/array.c - growing tables (core/internal.h): apart from the trace
 * object so that a library made of the Pallas writer alone (the OTF2
 * library for EZTrace, src/otf2_pallas/) takes it without the backends.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

int weft__array_grow(void **array, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 16;
	while (n < need)
		n *= 2;
	void *p = n <= SIZE_MAX / size ? realloc(*array, n * size) : NULL;
	if (p == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory growing a table to %zu entries", n);
	*array = p;
	*cap = n;
	return 0;
}

int weft__array_grow_zeroed(void **array, size_t *cap, size_t need, size_t size)
{
	size_t old = *cap;
	int rc = weft__array_grow(array, cap, need, size);
	if (rc == 0 && *cap > old)
		memset((char *)*array + old * size, 0, (*cap - old) * size);
	return rc;
}
