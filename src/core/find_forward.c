/* SPDX-License-Identifier: MIT */
/*
 * core/find_forward.c - the first offset of a file, from a given one on,
 * where a format's records start again. Readers use it after a size or
 * length field that points past the end of the file: when records start
 * again within the bytes that size would cover, the size is wrong and
 * more than the last record is lost (an error); when none do, the rest is
 * the last record, cut short (a warning: a writer that crashed leaves
 * this). The format decides what "records start" means (a probe); this
 * walks the file once, in pieces, through the reader's window.
 */
#include "core/internal.h"

/* Bytes looked at per window request. */
#define PIECE (64u << 10)

int weft__find_forward(weft_mapfile *mf, uint64_t from, uint64_t end, uint32_t head,
		       weft__start_probe probe, void *ctx, uint64_t *at)
{
	/* Pieces overlap by head - 1 bytes: every offset whose `head` bytes
	 * are in the file is probed once. */
	for (uint64_t c = from; c < end && end - c >= head;) {
		uint64_t len = end - c < PIECE ? end - c : PIECE;
		const unsigned char *p = weft__mapfile_get(mf, c, len);
		if (p == NULL)
			return 0;
		for (uint64_t i = 0; i + head <= len; i++) {
			const unsigned char *map = mf->map;
			uint64_t start = mf->map_start;
			if (probe(ctx, mf, c + i, p + i)) {
				*at = c + i;
				return 1;
			}
			/* The probe read further and moved the window. */
			if ((mf->map != map || mf->map_start != start) &&
			    (p = weft__mapfile_get(mf, c, len)) == NULL)
				return 0;
		}
		c += len - head + 1;
	}
	return 0;
}
