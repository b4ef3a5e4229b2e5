/* SPDX-License-Identifier: MIT */
/*
 * core/otf2_common.h - what the OTF2 reader (formats/otf2) and the OTF2
 * output (outputs/convert_otf2.c) share (otf2_common.c): libotf2's error
 * messages as weft's, and the layout of an anchor file.
 *
 * libotf2 prints its errors on stderr unless a callback takes them; weft
 * installs one (process-wide, once) that keeps the first message of each
 * thread since weft__otf2_quiet().
 */
#ifndef WEFT_CORE_OTF2_COMMON_H
#define WEFT_CORE_OTF2_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <otf2/otf2.h>

/* Installs the callback (once) and forgets this thread's last message. */
void weft__otf2_quiet(void);
/* The first message of libotf2 since weft__otf2_quiet(), "" if none. */
const char *weft__otf2_last_message(void);
/* Records weft's error `status` about `file`: "<what> (libotf2: <message>)". */
int weft__otf2_error(int status, const char *file, const char *what, OTF2_ErrorCode code);

/*
 * An anchor file in anchor format 3 (libotf2 2.x and 3.x; byte 7): a
 * 46-byte header (chunk header byte, byte-order byte, "OTF2\0", anchor
 * and trace format bytes, the 3-byte version, two u64 chunk sizes,
 * substrate and compression bytes, u64 numbers of locations and of
 * global definitions), three strings (machine name, creator,
 * description), a u32 property count, two strings per property, the u64
 * trace id, then the snapshot and thumbnail counts. Integers are
 * little-endian when the byte-order byte is 'B' (what libotf2 writes on
 * little-endian machines), else big-endian.
 */
#define WEFT__OTF2_ANCHOR_HEADER 46
/* Where the property count is, or 0 when a string runs past the end. */
size_t weft__otf2_anchor_properties_at(const unsigned char *b, size_t size);
/* A u32 or u64 of the anchor at `at` (in bounds) in its byte order. */
uint64_t weft__otf2_anchor_uint(const unsigned char *b, size_t at, int bytes);
/* Where the trace id is, or 0 when the file ends before it. */
size_t weft__otf2_anchor_trace_id_at(const unsigned char *b, size_t size);

#endif
