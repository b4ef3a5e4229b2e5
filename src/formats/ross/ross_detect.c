/* SPDX-License-Identifier: MIT */
/*
 * formats/ross/ross_detect.c - what kind of ROSS file a file is. ROSS
 * writes no magic and no byte-order marker, so the data decides: the first
 * records are parsed under every framing (sample headers, sample and
 * analysis headers, event records) and both byte orders, and the
 * hypothesis under which the most records parse and look real wins. The
 * file name (`-gvt.bin`, ...) is a hint that settles ties, e.g. between
 * the sample framing and the analysis framing of a file without analysis
 * records.
 */
#include <float.h>
#include <string.h>

#include "formats/ross/ross_internal.h"

/* The file name suffixes ROSS writes, and the kind of each. */
static const struct {
	const char *suffix;
	ross_kind kind;
} suffixes[] = {
	{ "-gvt.bin", ROSS_KIND_GVT },
	{ "-rt.bin", ROSS_KIND_RT },
	{ "-analysis-lps.bin", ROSS_KIND_VT },
	{ "-evtrace.bin", ROSS_KIND_EVTRACE },
	{ "-model.bin", ROSS_KIND_MODEL },
};

/* The kind a ROSS file name ends with; the prefix is what comes before. */
ross_kind weft__ross_name_kind(const char *name, size_t *prefix_len)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		size_t s = strlen(suffixes[i].suffix);
		if (n >= s && strcmp(name + n - s, suffixes[i].suffix) == 0) {
			if (prefix_len != NULL)
				*prefix_len = n - s;
			return suffixes[i].kind;
		}
	}
	return ROSS_KIND_NONE;
}

/*
 * Parses up to ROSS_DETECT_RECORDS records from `start` under one
 * hypothesis, stopping at the first record that does not parse.
 */
static void try_hypothesis(weft_mapfile *mf, uint64_t start, ross_family family,
			   int big_endian, ross_detection *h)
{
	ross_parse_ctx ctx = { family, big_endian, NULL };
	uint64_t offset = start;
	memset(h, 0, sizeof *h);
	h->family = family;
	h->big_endian = big_endian;
	h->all_model = 1;
	for (int i = 0; i < ROSS_DETECT_RECORDS; i++) {
		ross_record rec;
		const uint8_t *p;
		if (weft__ross_read(&ctx, mf, offset, mf->size, &rec, &p) != ROSS_PARSE_OK)
			break;
		h->records++;
		h->plausible += rec.plausible;
		if (rec.cls != ROSS_REC_MODEL)
			h->all_model = 0;
		if (rec.cls == ROSS_REC_ANALYSIS)
			h->saw_analysis = 1;
		offset += rec.size;
	}
	h->reached_end = offset == mf->size;
	if (h->records == 0)
		h->all_model = 0;
}

/*
 * A hypothesis worth taking on its own: most of its records look real,
 * and there are at least two of them or they end the file exactly.
 */
static int acceptable(const ross_detection *h)
{
	return h->plausible * 2 > h->records && (h->records >= 2 || h->reached_end);
}

/*
 * 1 when hypothesis a is better than b: more plausible records, then more
 * records, then the family the name says, then the native byte order,
 * then the simpler framing (samples before analysis before events).
 */
static int better(const ross_detection *a, const ross_detection *b, ross_kind hint)
{
	if (a->plausible != b->plausible)
		return a->plausible > b->plausible;
	if (a->records != b->records)
		return a->records > b->records;
	if (hint != ROSS_KIND_NONE) {
		int a_hint = a->family == weft__ross_kind_family(hint);
		int b_hint = b->family == weft__ross_kind_family(hint);
		if (a_hint != b_hint)
			return a_hint;
	}
	/* Analysis framing is only better when it saw analysis records. */
	if (a->family == ROSS_FAMILY_ANALYSIS && b->family == ROSS_FAMILY_SAMPLES &&
	    a->big_endian == b->big_endian)
		return a->saw_analysis;
	if (a->big_endian != b->big_endian)
		return !a->big_endian;
	return a->family < b->family;
}

/*
 * Every framing and byte order from `start`; the best acceptable one, or
 * the best of the name's framing when none is (see the header).
 */
int weft__ross_detect(weft_mapfile *mf, uint64_t start, ross_kind hint, int only_family,
		      ross_detection *out)
{
	ross_detection best, fallback, h;
	int have = 0, have_fallback = 0;
	memset(&best, 0, sizeof best);
	memset(&fallback, 0, sizeof fallback);
	for (int family = 0; family <= ROSS_FAMILY_EVTRACE; family++) {
		if (only_family >= 0 && family != only_family)
			continue;
		for (int be = 0; be <= 1; be++) {
			try_hypothesis(mf, start, (ross_family)family, be, &h);
			if (acceptable(&h) && (!have || better(&h, &best, hint))) {
				best = h;
				have = 1;
			}
			/* A file named like a ROSS file may start with odd values:
			 * the framing of its name is taken when nothing else fits. */
			if (hint != ROSS_KIND_NONE && h.records > 0 &&
			    h.family == weft__ross_kind_family(hint) &&
			    (!have_fallback || better(&h, &fallback, hint))) {
				fallback = h;
				have_fallback = 1;
			}
		}
	}
	weft__error_clear();
	*out = have ? best : fallback;
	return have || have_fallback;
}

/*
 * Looks byte by byte for the first offset where some hypothesis gives a
 * run of real-looking records, then detects from there.
 */
int weft__ross_detect_resync(weft_mapfile *mf, uint64_t limit, ross_kind hint,
			     int only_family, uint64_t *start, ross_detection *out)
{
	uint64_t end = mf->size < limit ? mf->size : limit;
	/* After garbage, the name says what to look for when it says something. */
	if (only_family < 0 && hint != ROSS_KIND_NONE)
		only_family = (int)weft__ross_kind_family(hint);
	for (uint64_t o = 1; o < end; o++) {
		for (int family = 0; family <= ROSS_FAMILY_EVTRACE; family++) {
			if (only_family >= 0 && family != only_family)
				continue;
			for (int be = 0; be <= 1; be++) {
				ross_detection h;
				try_hypothesis(mf, o, (ross_family)family, be, &h);
				if (h.plausible >= ROSS_RESYNC_RUN && h.plausible == h.records) {
					int rc = weft__ross_detect(mf, o, hint, only_family, out);
					if (rc == 1) {
						*start = o;
						return 1;
					}
				}
			}
		}
	}
	weft__error_clear();
	return 0;
}
