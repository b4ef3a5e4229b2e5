/* SPDX-License-Identifier: MIT */
/*
 * python/src/fields.h - the typed-field columns of an event batch: one
 * column per field name, filled from weft_event_fields(), turned into a
 * numpy array per batch with the type its values call for.
 */
#ifndef WEFTPY_FIELDS_H
#define WEFTPY_FIELDS_H

#include "weftpy.h"

/* What row r of a field column holds. */
enum { FV_MISSING = 0, FV_U, FV_I, FV_F, FV_B, FV_OBJ };

typedef union wpy_value {
	uint64_t u;
	int64_t i;
	double f;
} wpy_value;

/* A text, bytes or array field of a row: the field, its bytes copied
 * into the arena at `off` (turned into a Python object when taken). */
typedef struct wpy_pending {
	weft_field field;
	size_t off;
} wpy_pending;

typedef struct wpy_fcol {
	PyObject *name;     /* str; NULL for a column met while reading (made when taken) */
	char *cname;        /* the name's bytes */
	size_t cname_len;
	uint8_t *tag;       /* per row: FV_* */
	wpy_value *val;
	wpy_pending *pend;  /* per row, for FV_OBJ rows */
} wpy_fcol;

typedef struct wpy_fields {
	int active;         /* fields were asked for */
	int all;            /* fields=True: a column per name met */
	wpy_fcol *cols;
	size_t count, cap;
	size_t rows;        /* rows of the current batch's buffers */
	weft_field *buf;    /* weft_event_fields() output */
	size_t buf_cap;
	char *arena;        /* the bytes of the batch's texts, bytes and arrays */
	size_t arena_used, arena_cap;
} wpy_fields;

/* fields = None, True or an iterable of names: 0, or -1 with an error. */
int wpy_fields_init(wpy_fields *f, PyObject *spec);
/* Prepares empty columns of `rows` rows for a batch: -1 without memory. */
int wpy_fields_begin(wpy_fields *f, size_t rows);
/*
 * Stores the fields of `ev` in row `row`, without the GIL (no Python
 * object is made): -1 without memory (no Python error set).
 */
int wpy_fields_store(wpy_fields *f, const weft_trace *trace, const weft_event *ev, size_t row);
/* The batch's columns as {name: (values, missing mask or None), or None
 * when no row of the batch has the field} for n rows. */
PyObject *wpy_fields_take(wpy_fields *f, size_t n);
void wpy_fields_free(wpy_fields *f);

#endif /* WEFTPY_FIELDS_H */
