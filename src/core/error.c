/* SPDX-License-Identifier: MIT */
/*
 * core/error.c - status strings and the thread-local last-error message.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

#define WEFT_ERROR_MAX 1024

static _Thread_local char last_error[WEFT_ERROR_MAX];
/* The parts of the last error, for diagnostics that keep them apart. */
static _Thread_local char last_file[WEFT_ERROR_MAX];
static _Thread_local uint64_t last_offset = WEFT_NO_OFFSET;
static _Thread_local size_t last_body; /* where the text starts in last_error */

/* Short description of each status code, for messages and weft_strerror. */
const char *weft_strerror(int status)
{
	switch (status) {
	case WEFT_OK: return "success";
	case WEFT_EIO: return "input/output error";
	case WEFT_ENOMEM: return "out of memory";
	case WEFT_EFORMAT: return "malformed input";
	case WEFT_ETRUNCATED: return "truncated input";
	case WEFT_EUNSUPPORTED: return "unsupported input";
	case WEFT_EINVAL: return "invalid argument";
	case WEFT_ENOTFOUND: return "not found";
	case WEFT_EEXIST: return "already exists";
	case WEFT_EBYTEORDER: return "unsupported byte order";
	default: return "unknown error";
	}
}

const char *weft_last_error(void)
{
	return last_error;
}

void weft__error_clear(void)
{
	last_error[0] = '\0';
	last_file[0] = '\0';
	last_offset = WEFT_NO_OFFSET;
	last_body = 0;
}

const char *weft__error_file(void)
{
	return last_file[0] ? last_file : NULL;
}

uint64_t weft__error_offset(void)
{
	return last_offset;
}

const char *weft__error_text(void)
{
	return last_error + last_body;
}

const char *weft_last_error_file(void)
{
	return weft__error_file();
}

uint64_t weft_last_error_offset(void)
{
	return last_offset;
}

const char *weft_last_error_text(void)
{
	return weft__error_text();
}

/*
 * Formats "<file>: byte <offset>: <text>" into the thread's buffer. The
 * location prefix is what lets a user find the bad byte with a hex dump.
 * The file and the arguments may be the parts of the last error itself
 * (weft__error_file(), weft__error_text(): a message passed on with a new
 * status): everything is formatted into local buffers before either
 * buffer of the last error is written.
 */
int weft__error(int status, const char *file, uint64_t offset,
		const char *fmt, ...)
{
	char name[WEFT_ERROR_MAX], text[WEFT_ERROR_MAX];
	snprintf(name, sizeof name, "%s", file ? file : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	size_t n = 0;
	if (file != NULL)
		n = (size_t)snprintf(last_error, sizeof last_error, "%s: ", name);
	if (offset != WEFT_NO_OFFSET && n < sizeof last_error)
		n += (size_t)snprintf(last_error + n, sizeof last_error - n, "byte %llu: ",
				      (unsigned long long)offset);
	last_body = n < sizeof last_error ? n : 0;
	if (n < sizeof last_error)
		snprintf(last_error + n, sizeof last_error - n, "%s", text);
	memcpy(last_file, name, sizeof last_file);
	last_offset = offset;
	return status;
}

int weft__error_save(weft__error_copy *copy, int status)
{
	const char *file = weft__error_file();

	copy->status = status;
	copy->has_file = file != NULL;
	snprintf(copy->file, sizeof copy->file, "%s", file ? file : "");
	copy->offset = last_offset;
	snprintf(copy->text, sizeof copy->text, "%s", weft__error_text());
	return status;
}

int weft__error_raise(const weft__error_copy *copy)
{
	return weft__error(copy->status, copy->has_file ? copy->file : NULL, copy->offset,
			   "%s", copy->text);
}

/* Reports the failure of a system call on `file`, keeping errno's text. */
int weft__error_errno(const char *file, const char *what)
{
	int err = errno;
	int status = WEFT_EIO;
	if (err == ENOENT || err == ENOTDIR)
		status = WEFT_ENOTFOUND;
	else if (err == ENOMEM)
		status = WEFT_ENOMEM;
	return weft__error(status, file, WEFT_NO_OFFSET, "%s: %s", what,
			   strerror(err));
}
