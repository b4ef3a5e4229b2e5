/* SPDX-License-Identifier: MIT */
/*
 * python/src/columns.h - the columns of an event batch (time, end, stream,
 * code, offset, depth, parent) and the store of one event into them,
 * shared by the batch iterator (events.c) and its threaded readers
 * (parallel.c).
 */
#ifndef WEFTPY_COLUMNS_H
#define WEFTPY_COLUMNS_H

#include "weftpy.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL weftpy_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

/* The columns of a batch: name, numpy type, element size. */
enum { COL_TIME, COL_END, COL_STREAM, COL_CODE, COL_OFFSET, COL_DEPTH, COL_PARENT, COL_COUNT };
static const struct {
	const char *name;
	int type;
	size_t size;
} columns[COL_COUNT] = {
	{"time", NPY_UINT64, 8}, {"end", NPY_UINT64, 8}, {"stream", NPY_UINT32, 4},
	{"code", NPY_UINT32, 4}, {"offset", NPY_UINT64, 8}, {"depth", NPY_INT32, 4},
	{"parent", NPY_INT64, 8},
};

/* The pointers the loop of a batch writes through. */
typedef struct batch_out {
	uint64_t *time, *end, *offset;
	uint32_t *stream, *code;
	int32_t *depth;
	int64_t *parent;
} batch_out;

/* The pointers of row `n` on of columns col[COL_COUNT]. */
static inline batch_out batch_out_at(void *const *col, size_t n)
{
	batch_out o = {
		.time = (uint64_t *)col[COL_TIME] + n, .end = (uint64_t *)col[COL_END] + n,
		.offset = (uint64_t *)col[COL_OFFSET] + n, .stream = (uint32_t *)col[COL_STREAM] + n,
		.code = (uint32_t *)col[COL_CODE] + n, .depth = (int32_t *)col[COL_DEPTH] + n,
		.parent = (int64_t *)col[COL_PARENT] + n,
	};
	return o;
}

/* Stores one event in row n of the columns; -1 without memory (code table). */
static inline int store_event(wpy_codes *codes, const batch_out *o, size_t n, const weft_event *ev)
{
	int64_t code = wpy_codes_index_fast(codes, ev->code, ev->code_len);
	if (code < 0)
		return -1;
	o->time[n] = ev->time;
	o->end[n] = ev->end;
	o->stream[n] = ev->stream;
	o->code[n] = (uint32_t)code;
	o->offset[n] = ev->offset;
	o->depth[n] = ev->depth;
	o->parent[n] = ev->parent;
	return 0;
}

/*
 * Column k of n rows as a numpy array that owns the malloc'd buffer
 * *data (a capsule as its base frees it); *data is taken (set NULL)
 * whether or not this succeeds. NULL with an error.
 */
PyObject *wpy_column_take(void **data, int k, size_t n);

#endif /* WEFTPY_COLUMNS_H */
