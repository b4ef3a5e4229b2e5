/* SPDX-License-Identifier: MIT */
/*
 * weft/error.h - status codes and diagnostics shared by every weft call.
 *
 * Every function that can fail returns an int: 0 (or a positive count) on
 * success, a negative WEFT_E* code on failure. The detailed message of the
 * last failure on the calling thread is kept in a thread-local buffer and
 * names the file, the byte offset and what was expected there.
 */
#ifndef WEFT_ERROR_H
#define WEFT_ERROR_H

#include <stdint.h>

#include "weft/api.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

enum weft_status {
	WEFT_OK = 0,
	WEFT_EIO = -1,          /* a system call failed (errno text in the message) */
	WEFT_ENOMEM = -2,       /* out of memory, or a configured memory bound hit */
	WEFT_EFORMAT = -3,      /* the input is not what the format says it must be */
	WEFT_ETRUNCATED = -4,   /* the input ends in the middle of a record */
	WEFT_EUNSUPPORTED = -5, /* valid input that weft cannot handle (yet) */
	WEFT_EINVAL = -6,       /* a bad argument from the caller */
	WEFT_ENOTFOUND = -7,    /* no such file, stream or format */
	WEFT_EEXIST = -8,       /* the output exists and replacing it was not asked */
	WEFT_EBYTEORDER = -9    /* data written in the other byte order */
};

/* Short, static description of a status code ("malformed input", ...). */
const char *weft_strerror(int status);

/* Detailed message of the last failure on this thread ("" when none). */
const char *weft_last_error(void);
/*
 * The parts of that message, for front ends that keep them apart (the
 * Python module's exceptions): the file it names (NULL when none), the
 * byte offset in it (WEFT_NO_OFFSET when none) and the text after them.
 */
const char *weft_last_error_file(void);
uint64_t weft_last_error_offset(void);
const char *weft_last_error_text(void);

/* Severity of a diagnostic collected while opening or reading a trace. */
enum weft_severity {
	/* The data is usable and kept whole; its layout is unusual but one
	 * real writers produce (an ovni payload longer than the signature of
	 * the 1.14 models). `weft check` counts notes only with --strict. */
	WEFT_SEV_NOTE = 0,
	WEFT_SEV_WARNING = 1, /* the data is usable; something is off */
	WEFT_SEV_ERROR = 2    /* some data could not be read */
};

/*
 * One problem found in a trace: where (file and byte offset, or
 * WEFT_NO_OFFSET when the problem is not at one place) and what.
 */
#define WEFT_NO_OFFSET UINT64_MAX

typedef struct weft_diag {
	int severity;        /* enum weft_severity */
	int status;          /* WEFT_E* code that classifies it */
	const char *file;    /* path of the file, relative to the trace root */
	uint64_t offset;     /* byte offset in that file, or WEFT_NO_OFFSET */
	const char *message; /* what was expected and what was found */
} weft_diag;

/* "note", "warning" or "error" (enum weft_severity). */
const char *weft_severity_name(int severity);
/*
 * A diagnostic as the one line the `weft` commands print:
 * "<file>:<offset>: <severity>: <message>" (without ":<offset>" when it
 * has none; `default_file` when it names no file). malloc'd: free() it;
 * NULL without memory.
 */
char *weft_diag_line(const weft_diag *diag, const char *default_file);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_ERROR_H */
