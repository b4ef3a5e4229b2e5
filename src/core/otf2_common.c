/* SPDX-License-Identifier: MIT */
/*
 * core/otf2_common.c - libotf2's error messages as weft's, the layout of
 * an anchor file (otf2_common.h).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "core/otf2_common.h"

/* The first message of libotf2 since weft__otf2_quiet(), per thread. */
static _Thread_local char last_message[512];
static pthread_once_t quiet_once = PTHREAD_ONCE_INIT;

static OTF2_ErrorCode keep_message(void *data, const char *file, uint64_t line,
				   const char *function, OTF2_ErrorCode code,
				   const char *fmt, va_list va)
{
	(void)data; (void)file; (void)line; (void)function;
	if (last_message[0] != '\0')
		return code; /* the first message names the cause; the next ones its effects */
	const char *what = OTF2_Error_GetDescription(code);
	int n = snprintf(last_message, sizeof last_message, "%s", what ? what : "error");
	if (fmt != NULL && n >= 0 && (size_t)n + 2 < sizeof last_message) {
		memcpy(last_message + n, ": ", 3);
		vsnprintf(last_message + n + 2, sizeof last_message - (size_t)n - 2, fmt, va);
	}
	return code;
}

static void install_quiet(void)
{
	OTF2_Error_RegisterCallback(keep_message, NULL);
}

void weft__otf2_quiet(void)
{
	pthread_once(&quiet_once, install_quiet);
	last_message[0] = '\0';
}

const char *weft__otf2_last_message(void)
{
	return last_message;
}

int weft__otf2_error(int status, const char *file, const char *what, OTF2_ErrorCode code)
{
	const char *msg = last_message[0] ? last_message : OTF2_Error_GetDescription(code);
	return weft__error(status, file, WEFT_NO_OFFSET, "%s (libotf2: %s)", what,
			   msg ? msg : "unknown error");
}


/* ---- The anchor file ------------------------------------------------------------ */

size_t weft__otf2_anchor_properties_at(const unsigned char *b, size_t size)
{
	size_t at = WEFT__OTF2_ANCHOR_HEADER;
	for (int i = 0; i < 3; i++) {
		const unsigned char *nul = at < size ? memchr(b + at, 0, size - at) : NULL;
		if (nul == NULL)
			return 0;
		at = (size_t)(nul - b) + 1;
	}
	return at;
}

uint64_t weft__otf2_anchor_uint(const unsigned char *b, size_t at, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++) {
		int k = b[1] == 'B' ? bytes - 1 - i : i;
		v = v << 8 | b[at + (size_t)k];
	}
	return v;
}

size_t weft__otf2_anchor_trace_id_at(const unsigned char *b, size_t size)
{
	size_t at = weft__otf2_anchor_properties_at(b, size);
	if (at == 0 || size - at < 4)
		return 0;
	uint64_t count = weft__otf2_anchor_uint(b, at, 4);
	at += 4;
	for (uint64_t i = 0; i < 2 * count; i++) {
		const unsigned char *nul = at < size ? memchr(b + at, 0, size - at) : NULL;
		if (nul == NULL)
			return 0;
		at = (size_t)(nul - b) + 1;
	}
	return size - at >= 8 ? at : 0;
}
