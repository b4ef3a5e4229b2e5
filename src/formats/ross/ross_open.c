/* SPDX-License-Identifier: MIT */
/*
 * formats/ross/ross_open.c - opening a ROSS run: the files of a directory
 * (or one file), the kind of each (ross_detect.c, or forced), then one
 * pass over each file that frames and validates every record, finds the
 * PE, KP and LP streams and notes what looks wrong. The events themselves
 * are read later, through the readers of ross_stream.c.
 *
 * What the pass cannot accept becomes a diagnostic with its byte offset:
 * a record cut short by the end of the file is a warning (every record
 * before it is read); an impossible header or size is an error, and the
 * readable part of the file ends there unless the resync option is on, in
 * which case the pass looks for the next place where a run of valid
 * records starts, reports the bytes it skipped and goes on.
 */
#include <dirent.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/ross/ross_internal.h"

/* Files a run directory may hold (bounds the file table). */
#define ROSS_MAX_FILES 4096u
/* Bytes read by the probe. */
#define PROBE_WINDOW (256u << 10)
/* How far into a file resync looks for the first records when the
 * start of the file is garbage. */
#define RESYNC_DETECT_LIMIT (1u << 20)
/* The smallest window of a per-stream reader. */
#define MIN_STREAM_WINDOW (64u << 10)

/* ---- Stream keys ------------------------------------------------------------ */

ross_key weft__ross_record_key(uint32_t file, const ross_record *rec)
{
	ross_key k;
	memset(&k, 0, sizeof k);
	k.file = file;
	k.cls = weft__ross_stream_class(rec->cls);
	switch (rec->cls) {
	case ROSS_REC_PE:
		k.pe = rec->pe;
		break;
	case ROSS_REC_KP:
		k.pe = rec->pe;
		k.kp = rec->kp;
		break;
	case ROSS_REC_EVENT:
		k.lp = rec->lp;
		break;
	default:
		k.pe = rec->pe;
		k.kp = rec->kp;
		k.lp = rec->lp;
		break;
	}
	return k;
}

/* A hash of every part of a key. */
static uint64_t key_hash(const ross_key *k)
{
	uint64_t h = (k->pe + 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
	h = (h ^ (h >> 29) ^ k->kp) * 0x94D049BB133111EBull;
	h = (h ^ (h >> 31) ^ k->lp) * 0x9E3779B97F4A7C15ull;
	h ^= ((uint64_t)k->file << 8 | k->cls) * 0xD6E8FEB86659FD93ull;
	return h ^ (h >> 32);
}

/* Two keys name the same stream. */
static int key_equal(const ross_key *a, const ross_key *b)
{
	return a->pe == b->pe && a->kp == b->kp && a->lp == b->lp && a->file == b->file &&
	       a->cls == b->cls;
}

/* The slot of a key in the map: where it is, or the empty slot for it. */
static size_t map_slot(const ross_data *d, const ross_key *k)
{
	size_t i = (size_t)key_hash(k) & (d->map_cap - 1);
	while (d->map[i] != UINT32_MAX && !key_equal(&d->streams[d->map[i]].key, k))
		i = (i + 1) & (d->map_cap - 1);
	return i;
}

/* The stream index of a key through the map; -1 when unknown. */
int64_t weft__ross_stream_lookup(const ross_data *d, const ross_key *key)
{
	if (d->map_cap == 0)
		return -1;
	size_t i = map_slot(d, key);
	return d->map[i] == UINT32_MAX ? -1 : (int64_t)d->map[i];
}

/* A map of `cap` slots (a power of two) holding every stream. */
static int map_fill(ross_data *d, size_t cap)
{
	uint32_t *map = malloc(cap * sizeof *map);
	if (map == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	memset(map, 0xff, cap * sizeof *map);
	free(d->map);
	d->map = map;
	d->map_cap = cap;
	for (size_t s = 0; s < d->stream_count; s++)
		d->map[map_slot(d, &d->streams[s].key)] = (uint32_t)s;
	return 0;
}

/* After the streams were sorted: every key points at its new index. */
int weft__ross_map_rebuild(ross_data *d)
{
	return map_fill(d, d->map_cap ? d->map_cap : 64);
}

/* Appends a stream for a new key, growing the map at half load. */
int64_t weft__ross_stream_insert(ross_data *d, const ross_key *key)
{
	if ((d->stream_count + 1) * 2 > d->map_cap &&
	    map_fill(d, d->map_cap ? d->map_cap * 2 : 64) < 0)
		return WEFT_ENOMEM;
	if (weft__array_grow((void **)&d->streams, &d->stream_cap, d->stream_count + 1,
			     sizeof *d->streams) < 0)
		return WEFT_ENOMEM;
	ross_stream *s = &d->streams[d->stream_count];
	memset(s, 0, sizeof *s);
	s->key = *key;
	d->map[map_slot(d, key)] = (uint32_t)d->stream_count;
	return (int64_t)d->stream_count++;
}

/* ---- Discovery -------------------------------------------------------------------- */

/* What the open needs besides the backend data. */
typedef struct open_ctx {
	weft_trace *trace;
	ross_data *d;
	int quiet;                 /* a rank's piece: no warning about the kind */
	uint64_t records;
	uint64_t unfiled_records;  /* beyond the stream limit */
} open_ctx;

/* Appends a file of the run (`name` relative to the trace root). */
static int add_file(open_ctx *c, const char *path, const char *name)
{
	ross_data *d = c->d;
	if (d->file_count >= ROSS_MAX_FILES)
		return weft__error(WEFT_EUNSUPPORTED, d->root, WEFT_NO_OFFSET,
				   "more than %u ROSS files in one run", ROSS_MAX_FILES);
	ross_file *n = realloc(d->files, (d->file_count + 1) * sizeof *n);
	if (n == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	d->files = n;
	ross_file *f = &d->files[d->file_count];
	memset(f, 0, sizeof *f);
	size_t prefix_len = 0;
	f->name_kind = weft__ross_name_kind(name, &prefix_len);
	f->path = strdup(path);
	f->name = strdup(name);
	f->prefix = f->name_kind != ROSS_KIND_NONE ? strndup(name, prefix_len) : NULL;
	d->file_count++; /* freed by the close even when a copy failed */
	if (f->path == NULL || f->name == NULL ||
	    (f->name_kind != ROSS_KIND_NONE && f->prefix == NULL))
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	f->kind = ROSS_KIND_NONE;
	return 0;
}

/* qsort order of file names: byte order, so that runs list alike. */
static int name_compare(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 when `dir`/`name` is a regular file. */
static int is_regular(const char *dir, const char *name)
{
	struct stat st;
	char *p = weft__path_join(dir, name);
	int ok = p != NULL && stat(p, &st) == 0 && S_ISREG(st.st_mode);
	free(p);
	return ok;
}

/* The names of the ROSS files of a directory, sorted; their count or < 0. */
static int list_directory(const char *path, char ***out)
{
	DIR *dir = opendir(path);
	if (dir == NULL)
		return weft__error_errno(path, "cannot read the directory");
	char **names = NULL;
	size_t n = 0;
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(dir)) != NULL) {
		if (weft__ross_name_kind(e->d_name, NULL) == ROSS_KIND_NONE ||
		    !is_regular(path, e->d_name))
			continue;
		char **bigger = n < ROSS_MAX_FILES ? realloc(names, (n + 1) * sizeof *names) : NULL;
		if (bigger == NULL || (bigger[n] = strdup(e->d_name)) == NULL) {
			names = bigger != NULL ? bigger : names;
			rc = n >= ROSS_MAX_FILES ?
			     weft__error(WEFT_EUNSUPPORTED, path, WEFT_NO_OFFSET,
					 "more than %u ROSS files in one run", ROSS_MAX_FILES) :
			     weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
			break;
		}
		names = bigger;
		n++;
	}
	closedir(dir);
	if (rc == 0 && n > 1)
		qsort(names, n, sizeof *names, name_compare);
	*out = names;
	return rc < 0 ? rc : (int)n;
}

/* The files of the run: every ROSS file of a directory, or the one file. */
static int discover(open_ctx *c, const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return weft__error_errno(path, "cannot open");
	if (!S_ISDIR(st.st_mode)) {
		const char *slash = strrchr(path, '/');
		c->d->single_file = 1;
		return add_file(c, path, slash != NULL && slash[1] != '\0' ? slash + 1 : path);
	}
	char **names = NULL;
	int n = list_directory(path, &names);
	int rc = n < 0 ? n : 0;
	for (int i = 0; i < n; i++) {
		char *full = weft__path_join(path, names[i]);
		if (rc == 0)
			rc = full != NULL ? add_file(c, full, names[i]) :
			     weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		free(full);
	}
	for (int i = 0; i < (n > 0 ? n : 0); i++)
		free(names[i]);
	free(names);
	if (rc == 0 && n == 0)
		return weft__error(WEFT_ENOTFOUND, path, WEFT_NO_OFFSET,
				   "expected ROSS files (<prefix>-gvt.bin, -rt.bin, "
				   "-analysis-lps.bin, -evtrace.bin or -model.bin), found none");
	return rc;
}

/* ---- Kind of a file ----------------------------------------------------------------- */

/* The state of the pass over one file. */
typedef struct file_scan {
	open_ctx *c;
	ross_file *f;
	uint32_t index;
	weft_mapfile mf;
	int kind_from_data;        /* an engine kind the name did not give */
	const char *detected_from; /* for the metadata */
	ross_notes notes;
	uint64_t skipped_bytes;
	int next_cut;              /* the next of the file's cuts to find */
	uint64_t next_bound;       /* its byte bound; UINT64_MAX: none to find */
	/*
	 * Stream prediction (as in the readers): the stream that followed
	 * each of this file's streams last time, relative to `base` (the
	 * first stream this file may add), and the previous record's.
	 */
	uint32_t base, previous;
	uint32_t *successor;
	size_t successor_cap;
} file_scan;

/* What the records under a framing are, for messages. */
static const char *family_text(ross_family family, int all_model)
{
	switch (family) {
	case ROSS_FAMILY_ANALYSIS: return "analysis-lps records (vt)";
	case ROSS_FAMILY_EVTRACE: return "event-trace records";
	default: return all_model ? "model samples" : "engine samples";
	}
}

/* The kind the detected data says, with the name as a hint. */
static ross_kind kind_from_detection(file_scan *s, const ross_detection *det)
{
	if (det->family == ROSS_FAMILY_ANALYSIS)
		return ROSS_KIND_VT;
	if (det->family == ROSS_FAMILY_EVTRACE)
		return ROSS_KIND_EVTRACE;
	if (det->all_model)
		return ROSS_KIND_MODEL;
	if (s->f->name_kind == ROSS_KIND_GVT || s->f->name_kind == ROSS_KIND_RT)
		return s->f->name_kind;
	s->kind_from_data = 1; /* gvt, or rt when an "end" sample shows up */
	return ROSS_KIND_GVT;
}

/*
 * Fails for a file no hypothesis parses, with the message of the framing
 * its name says (or sample headers) at the first record.
 */
static int not_ross(file_scan *s)
{
	ross_kind k = s->f->name_kind;
	ross_parse_ctx ctx = { k != ROSS_KIND_NONE ? weft__ross_kind_family(k) :
			       ROSS_FAMILY_SAMPLES, 0, s->f->name };
	ross_record rec;
	const uint8_t *p;
	char text[512];
	if (weft__ross_read(&ctx, &s->mf, 0, s->mf.size, &rec, &p) == ROSS_PARSE_OK)
		weft__error(WEFT_EFORMAT, s->f->name, 0, "the records do not look real "
			    "(times negative, NaN or out of range)");
	snprintf(text, sizeof text, "%s", weft__error_text());
	uint64_t offset = weft__error_offset();
	return weft__error(WEFT_EFORMAT, s->f->name, offset,
			   "not ROSS data (no record framing or byte order fits): %s", text);
}

/* Kind, framing and byte order of the file: forced, or from its data. */
static int choose_kind(file_scan *s)
{
	ross_file *f = s->f;
	ross_detection det;
	ross_kind forced = s->c->d->forced;
	int only = forced != ROSS_KIND_NONE ? (int)weft__ross_kind_family(forced) : -1;
	if (f->size == 0 && forced == ROSS_KIND_NONE && f->name_kind == ROSS_KIND_NONE)
		return weft__error(WEFT_EFORMAT, f->name, WEFT_NO_OFFSET,
				   "expected ROSS records, found an empty file");
	int rc = f->size > 0 ? weft__ross_detect(&s->mf, 0, f->name_kind, only, &det) : 0;
	uint64_t start = 0;
	if (rc == 0 && f->size > 0 && s->c->d->resync)
		rc = weft__ross_detect_resync(&s->mf, RESYNC_DETECT_LIMIT, f->name_kind, only,
					      &start, &det);
	if (forced != ROSS_KIND_NONE || f->size == 0) {
		f->kind = forced != ROSS_KIND_NONE ? forced : f->name_kind;
		f->parse.family = weft__ross_kind_family(f->kind);
		f->parse.big_endian = rc == 1 ? det.big_endian : 0;
		s->detected_from = forced != ROSS_KIND_NONE ? "forced" : "name (empty file)";
		return 1;
	}
	if (rc == 0)
		return not_ross(s);
	f->kind = kind_from_detection(s, &det);
	f->parse.family = det.family;
	f->parse.big_endian = det.big_endian;
	s->detected_from = f->name_kind == ROSS_KIND_NONE ? "data" :
			   f->kind == f->name_kind ? "name and data" : "data (not the name)";
	if (start > 0)
		s->detected_from = "data after garbage (resync)";
	if (f->name_kind != ROSS_KIND_NONE && f->kind != f->name_kind && !s->c->quiet)
		weft__trace_diag(s->c->trace, WEFT_SEV_WARNING, WEFT_EFORMAT, f->name, 0,
				 "named like a %s file, but its records are %s: read as %s",
				 weft__ross_kind_name(f->name_kind),
				 family_text(det.family, det.all_model),
				 weft__ross_kind_name(f->kind));
	return 1;
}

/* ---- The pass ---------------------------------------------------------------------------- */

/*
 * The stream of a key predicted from the previous record's (every dump
 * of a rank lists its entities in the same order), or -1.
 */
static int64_t predicted_stream(const file_scan *s, const ross_key *key)
{
	if (s->previous >= s->successor_cap || s->successor[s->previous] == UINT32_MAX)
		return -1;
	size_t idx = (size_t)s->base + s->successor[s->previous];
	const ross_data *d = s->c->d;
	return idx < d->stream_count && key_equal(&d->streams[idx].key, key) ? (int64_t)idx : -1;
}

/* Remembers that stream idx followed the previous record's stream. */
static void remember_stream(file_scan *s, int64_t idx)
{
	uint32_t rel = (uint32_t)(idx - s->base);
	size_t need = (size_t)rel + 1;
	if (need > s->successor_cap) {
		size_t cap = s->successor_cap ? 2 * s->successor_cap : 64;
		while (cap < need)
			cap *= 2;
		uint32_t *bigger = realloc(s->successor, cap * sizeof *bigger);
		if (bigger == NULL)
			return; /* no prediction: the look-up still works */
		memset(bigger + s->successor_cap, 0xff, (cap - s->successor_cap) * sizeof *bigger);
		s->successor = bigger;
		s->successor_cap = cap;
	}
	if (s->previous < s->successor_cap)
		s->successor[s->previous] = rel;
	s->previous = rel;
}

/* Files a record under its stream (a new one when needed) and notes it. */
static int file_record(file_scan *s, const ross_record *rec, uint64_t offset)
{
	ross_data *d = s->c->d;
	ross_key key = weft__ross_record_key(s->index, rec);
	int64_t idx = predicted_stream(s, &key);
	if (idx < 0)
		idx = weft__ross_stream_lookup(d, &key);
	if (idx < 0) {
		if (d->stream_count >= ROSS_MAX_STREAMS) {
			if (s->c->unfiled_records++ == 0)
				weft__trace_diag(s->c->trace, WEFT_SEV_ERROR, WEFT_ENOMEM,
						 s->f->name, offset, "more than %u streams (PE, KP, "
						 "LP): the records of further ones are skipped",
						 ROSS_MAX_STREAMS);
			return 0;
		}
		if ((idx = weft__ross_stream_insert(d, &key)) < 0)
			return (int)idx;
	}
	remember_stream(s, idx);
	ross_stream *st = &d->streams[idx];
	if (st->records++ == 0)
		st->first_offset = offset;
	st->last_offset = offset;
	s->f->records++;
	s->c->records++;
	weft__progress_count(s->c->trace, 1);
	return 0;
}

/* The sanity notes of a record: times, sizes, the schema. */
static void note_record(file_scan *s, const ross_record *rec, uint64_t offset)
{
	ross_notes *n = &s->notes;
	int clamped = 0;
	if (rec->cls != ROSS_REC_ANALYSIS) /* ROSS leaves that real time unset */
		weft__ross_time_ns(rec->real_time, s->c->d->time_scale, &clamped);
	if (clamped && n->clamped++ == 0)
		n->first_clamped = offset;
	if (rec->cls == ROSS_REC_EVENT && rec->recv_time < rec->virtual_time &&
	    n->reversed++ == 0)
		n->first_reversed = offset;
	if (rec->cls == ROSS_REC_LP)
		n->lp_sizes |= rec->fixed == ROSS_SAMPLE_HEADER + ROSS_LP_OLD_BODY ? 1 : 2;
	if (rec->cls != ROSS_REC_EVENT && rec->virtual_time == DBL_MAX)
		n->saw_end_time = 1;
	const ross_schema *sc = s->c->d->schemas.by_class[rec->cls];
	if (sc != NULL && rec->data_size < sc->size && n->short_model++ == 0)
		n->first_short_model = offset;
}

/*
 * A sample file (framing not forced) that holds an analysis header where
 * a sample header was expected is an analysis-lps file: the framing is
 * widened. Returns 1 when that happened.
 */
static int widen_to_analysis(file_scan *s, uint64_t offset)
{
	ross_file *f = s->f;
	if (s->c->d->forced != ROSS_KIND_NONE || f->parse.family != ROSS_FAMILY_SAMPLES)
		return 0;
	ross_parse_ctx ctx = { ROSS_FAMILY_ANALYSIS, f->parse.big_endian, NULL };
	ross_record rec;
	const uint8_t *p;
	if (weft__ross_read(&ctx, &s->mf, offset, f->size, &rec, &p) != ROSS_PARSE_OK ||
	    !rec.plausible)
		return 0;
	f->parse.family = ROSS_FAMILY_ANALYSIS;
	if (f->kind != ROSS_KIND_VT) {
		if (f->name_kind != ROSS_KIND_NONE && f->name_kind != ROSS_KIND_VT)
			weft__trace_diag(s->c->trace, WEFT_SEV_WARNING, WEFT_EFORMAT, f->name,
					 offset, "named like a %s file, but it holds analysis "
					 "records (from here): read as vt",
					 weft__ross_kind_name(f->name_kind));
		f->kind = ROSS_KIND_VT;
		s->kind_from_data = 0;
	}
	return 1;
}

/* 1 when a run of valid records that look real starts at `o`. */
static int run_starts_at(file_scan *s, uint64_t o)
{
	ross_parse_ctx ctx = s->f->parse;
	uint64_t pos = o;
	ctx.file = NULL;
	for (int k = 0; k < ROSS_RESYNC_RUN; k++) {
		ross_record rec;
		const uint8_t *p;
		if (weft__ross_read(&ctx, &s->mf, pos, s->f->size, &rec, &p) != ROSS_PARSE_OK ||
		    !rec.plausible)
			return 0;
		pos += rec.size;
		if (pos == s->f->size)
			return 1;
	}
	return 1;
}

/* The next offset after `from` where records start again, or UINT64_MAX. */
static uint64_t find_resync(file_scan *s, uint64_t from)
{
	for (uint64_t o = from; o < s->f->size; o++)
		if (run_starts_at(s, o))
			return o;
	return UINT64_MAX;
}

/* Remembers a skipped region for the readers; -1 when there are too many. */
static int add_skip(ross_file *f, uint64_t from, uint64_t to)
{
	if (f->skip_count >= ROSS_MAX_SKIPS)
		return -1;
	if (weft__array_grow((void **)&f->skips, &f->skip_cap, f->skip_count + 1,
			     sizeof *f->skips) < 0)
		return -1;
	f->skips[f->skip_count++] = (ross_skip){ from, to };
	return 0;
}

/*
 * A record that the end of the file cuts, without resync: when records
 * start again within what is left, its size is wrong and more than the
 * last record is lost. Then the note says so and it returns 1 (an error);
 * 0 for a cut last record (a warning). What is left is at most the
 * largest record (1 MiB of model data and a header).
 */
static int cut_loses_more(file_scan *s, uint64_t offset, char *note, size_t size)
{
	uint64_t next = find_resync(s, offset + 1);
	if (next == UINT64_MAX)
		return 0;
	snprintf(note, size, ", but records start at byte %llu within them: the size is "
		 "wrong and the %llu bytes to the end are lost (reading of this file "
		 "stops here: every record before it is read)", (unsigned long long)next,
		 (unsigned long long)(s->f->size - offset));
	return 1;
}

/*
 * A record that cannot be read at `offset` (the error is set): with
 * resync, skips to the next run of valid records (returns 1 and moves
 * *offset); otherwise reports where reading stops (returns 0).
 */
static int handle_bad(file_scan *s, ross_parse_status st, uint64_t *offset)
{
	char text[768], note[256];
	const char *file = s->f->name;
	uint64_t at = weft__error_offset();
	snprintf(text, sizeof text, "%s", weft__error_text());
	uint64_t next = s->c->d->resync ? find_resync(s, *offset + 1) : UINT64_MAX;
	if (next != UINT64_MAX && add_skip(s->f, *offset, next) == 0) {
		weft__trace_diag(s->c->trace, WEFT_SEV_ERROR, WEFT_EFORMAT, file, at,
				 "%s (resync: %llu bytes skipped, reading goes on at byte %llu)",
				 text, (unsigned long long)(next - *offset),
				 (unsigned long long)next);
		s->skipped_bytes += next - *offset;
		*offset = next;
		return 1;
	}
	if (next != UINT64_MAX)
		snprintf(note, sizeof note, " (more than %u garbage regions: reading of this "
			 "file stops here)", ROSS_MAX_SKIPS);
	else if (s->c->d->resync && st == ROSS_PARSE_BAD)
		snprintf(note, sizeof note, " (resync: no valid record follows; the %llu bytes "
			 "to the end are skipped)", (unsigned long long)(s->f->size - *offset));
	else if (st == ROSS_PARSE_TRUNCATED && !s->c->d->resync &&
		 cut_loses_more(s, *offset, note, sizeof note))
		st = ROSS_PARSE_BAD; /* more than the last record is lost */
	else
		snprintf(note, sizeof note, " (reading of this file stops here: every record "
			 "before it is read)");
	int truncated = st == ROSS_PARSE_TRUNCATED && next == UINT64_MAX;
	weft__trace_diag(s->c->trace, truncated ? WEFT_SEV_WARNING : WEFT_SEV_ERROR,
			 truncated ? WEFT_ETRUNCATED : WEFT_EFORMAT, file, at, "%s%s", text, note);
	s->f->truncated = truncated;
	return 0;
}

/* How far ahead of the record being framed the file is prefetched. */
#define SCAN_PREFETCH 2048

/*
 * The file's cuts (f->cuts) met at record `offset`, which is at or past
 * s->next_bound: cut k is the first record start at or after the k-th of
 * `grid` equal byte pieces (on ranks, the boundary a rank's piece scan
 * starts from).
 */
static void note_cuts(file_scan *s, uint64_t offset)
{
	ross_file *f = s->f;
	int grid = s->c->d->grid;
	while (s->next_cut < grid && offset >= s->next_bound) {
		f->cuts[s->next_cut++] = offset;
		s->next_bound = s->next_cut < grid
				? weft__ross_piece_bound(f->size, s->next_cut, grid) : UINT64_MAX;
	}
}

/* Frames every record of the file, up to the end or the first problem. */
static int scan_file(file_scan *s)
{
	ross_file *f = s->f;
	uint64_t offset = 0;
	s->next_cut = 0;
	s->next_bound = f->cuts != NULL ? 0 : UINT64_MAX;
	while (offset < f->size) {
		ross_record rec;
		const uint8_t *p;
		ross_parse_status st = weft__ross_read(&f->parse, &s->mf, offset, f->size,
						       &rec, &p);
		/* The hardware prefetcher stops at page boundaries: ask ahead. */
		if (st == ROSS_PARSE_OK && offset + SCAN_PREFETCH < s->mf.map_start + s->mf.map_len)
			__builtin_prefetch(p + SCAN_PREFETCH);
		if (st == ROSS_PARSE_OK) {
			if (offset >= s->next_bound)
				note_cuts(s, offset);
			int rc = file_record(s, &rec, offset);
			if (rc < 0)
				return rc;
			note_record(s, &rec, offset);
			offset += rec.size;
			continue;
		}
		if (st == ROSS_PARSE_IO)
			return WEFT_EIO; /* the mapping set the error */
		if (st == ROSS_PARSE_BAD && widen_to_analysis(s, offset))
			continue;
		if (offset == 0 && st == ROSS_PARSE_BAD && s->c->d->single_file && !s->c->d->resync)
			return WEFT_EFORMAT; /* the error names the first record */
		if (!handle_bad(s, st, &offset))
			break;
	}
	f->valid_end = offset < f->size ? offset : f->size;
	for (int k = s->next_cut; f->cuts != NULL && k <= s->c->d->grid; k++)
		f->cuts[k] = f->valid_end;
	return 0;
}

/* The warnings the notes of the pass add up to (one line each). */
static void report_notes(file_scan *s)
{
	weft_trace *t = s->c->trace;
	const char *file = s->f->name;
	const ross_notes *n = &s->notes;
	if (n->clamped)
		weft__trace_diag(t, WEFT_SEV_WARNING, WEFT_EFORMAT, file, n->first_clamped,
				 "%llu record(s) with a real time that is negative, NaN or too "
				 "large: their event time is clamped to 0 or to the largest time "
				 "(first here)", (unsigned long long)n->clamped);
	if (n->reversed)
		weft__trace_diag(t, WEFT_SEV_WARNING, WEFT_EFORMAT, file, n->first_reversed,
				 "%llu event record(s) received before they were sent "
				 "(virtual_recv_time < virtual_send_time; first here)",
				 (unsigned long long)n->reversed);
	if (n->short_model)
		weft__trace_diag(t, WEFT_SEV_WARNING, WEFT_EFORMAT, file, n->first_short_model,
				 "%llu record(s) with less model data than the model schema "
				 "describes: their fields cannot be decoded (first here)",
				 (unsigned long long)n->short_model);
	if (n->lp_sizes == 3)
		weft__trace_diag(t, WEFT_SEV_WARNING, WEFT_EFORMAT, file, WEFT_NO_OFFSET,
				 "LP samples of both 36 bytes (older ROSS) and 48 bytes");
}

/* Metadata of the root node of a file. */
static json_t *file_metadata(const file_scan *s)
{
	const ross_file *f = s->f;
	json_t *o = json_object();
	json_object_set_new(o, "file", json_string(f->name));
	json_object_set_new(o, "kind", json_string(weft__ross_kind_name(f->kind)));
	json_object_set_new(o, "detected_from", json_string(s->detected_from));
	json_object_set_new(o, "byte_order", json_string(f->parse.big_endian ?
							 "big-endian" : "little-endian"));
	json_object_set_new(o, "records", json_integer((json_int_t)f->records));
	json_object_set_new(o, "file_bytes", json_integer((json_int_t)f->size));
	json_object_set_new(o, "read_bytes", json_integer((json_int_t)f->valid_end));
	json_object_set_new(o, "skipped_bytes", json_integer((json_int_t)s->skipped_bytes));
	return o;
}

/*
 * Starts the pass over file `index`: maps it and chooses its kind.
 * Returns 1 (then end_file), or < 0 when it is not ROSS data or cannot
 * be read (the error set).
 */
static int begin_file(open_ctx *c, uint32_t index, file_scan *s)
{
	memset(s, 0, sizeof *s);
	s->c = c;
	s->f = &c->d->files[index];
	s->index = index;
	s->base = (uint32_t)c->d->stream_count;
	s->previous = UINT32_MAX;
	s->f->parse.file = s->f->name;
	s->f->records = 0;
	int rc = weft__mapfile_open(&s->mf, s->f->path, s->f->name, ROSS_WINDOW);
	weft__mapfile_count(&s->mf, c->trace);
	if (rc < 0)
		return rc;
	s->f->size = s->mf.size;
	rc = choose_kind(s);
	if (rc != 1)
		weft__mapfile_close(&s->mf);
	return rc;
}

/* Ends the pass begun by begin_file. */
static void end_file(file_scan *s)
{
	weft__mapfile_close(&s->mf);
	free(s->successor);
	s->successor = NULL;
}

/* What the pass found, once the records are counted: kind, warnings, metadata. */
static int finish_file(file_scan *s, json_t **meta)
{
	if (s->kind_from_data && s->f->kind == ROSS_KIND_GVT && s->notes.saw_end_time)
		s->f->kind = ROSS_KIND_RT; /* only real-time sampling ends with DBL_MAX */
	report_notes(s);
	s->f->readable = 1;
	*meta = file_metadata(s);
	return *meta != NULL ? 0 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
					       "out of memory");
}

/*
 * Opens, recognises and scans one file. A file that is not ROSS data
 * fails the open of a single-file trace; in a directory it becomes an
 * error diagnostic and is left out. The root metadata is kept in *meta.
 */
static int open_file(open_ctx *c, uint32_t index, json_t **meta)
{
	file_scan s;
	*meta = NULL;
	size_t streams_before = c->d->stream_count;
	int rc = begin_file(c, index, &s);
	if (rc == 1) {
		rc = scan_file(&s);
		end_file(&s);
	}
	if (rc < 0 && c->d->single_file)
		return rc;
	if (rc < 0) {
		/* Forget what the pass filed before it failed. */
		weft__trace_diag_last_error(c->trace, WEFT_SEV_ERROR, rc, " (the file is left out)");
		c->records -= s.f->records;
		s.f->records = 0;
		s.f->valid_end = 0;
		s.f->skip_count = 0;
		c->d->stream_count = streams_before;
		return weft__ross_map_rebuild(c->d);
	}
	return finish_file(&s, meta);
}

/*
 * A file the ranks scanned in pieces (ross_share.c): its streams are in
 * the table already; its kind is chosen again here, as open_file would,
 * with its warning, and the ranks' counts and notes taken.
 */
static int install_file(open_ctx *c, uint32_t index, const ross_file_scanned *scanned,
			json_t **meta)
{
	file_scan s;
	*meta = NULL;
	int rc = begin_file(c, index, &s);
	if (rc == 1) {
		end_file(&s);
		rc = s.f->size == s.f->cuts[c->d->parts] ? 0
		     : weft__error(WEFT_ETRUNCATED, s.f->name, s.f->cuts[c->d->parts],
				   "the file changed while the ranks opened it: it had %llu "
				   "bytes, it now has %llu",
				   (unsigned long long)s.f->cuts[c->d->parts],
				   (unsigned long long)s.f->size);
	}
	if (rc < 0)
		return rc;
	s.notes = scanned->notes;
	s.f->records = scanned->records;
	s.f->valid_end = s.f->size;
	c->records += scanned->records;
	weft__progress_count(c->trace, scanned->records);
	return finish_file(&s, meta);
}

/* How far past the start of its piece a rank looks for a record start. */
#define PIECE_SEARCH (2u << 20)

/*
 * The first record start at or after `from` (a run of real-looking
 * records), or the file's end when none starts before it; UINT64_MAX when
 * none is found within PIECE_SEARCH bytes.
 */
static uint64_t piece_start(file_scan *s, uint64_t from)
{
	uint64_t size = s->f->size;
	uint64_t limit = size - from > PIECE_SEARCH ? from + PIECE_SEARCH : size;
	for (uint64_t o = from; o < limit; o++)
		if (run_starts_at(s, o))
			return o;
	return limit == size ? size : UINT64_MAX;
}

/* Frames the records of a piece (see weft__ross_scan_piece). */
static int scan_piece(file_scan *s, uint64_t from, uint64_t to, ross_piece *out)
{
	ross_file *f = s->f;
	uint64_t offset = from == 0 ? 0 : piece_start(s, from);
	if (offset == UINT64_MAX)
		return 0;
	out->start = offset;
	while (offset < to && offset < f->size) {
		ross_record rec;
		const uint8_t *p;
		if (weft__ross_read(&f->parse, &s->mf, offset, f->size, &rec, &p) != ROSS_PARSE_OK)
			return 0; /* scanned whole by every rank, which reports it */
		int rc = file_record(s, &rec, offset);
		if (rc < 0)
			return rc;
		note_record(s, &rec, offset);
		out->records++;
		offset += rec.size;
	}
	out->end = offset;
	out->notes = s->notes;
	out->clean = s->c->unfiled_records == 0;
	return 0;
}

/*
 * Files below this many bytes per rank are scanned whole by every rank
 * (the test hook WEFT_TEST_ROSS_PIECE_MIN lowers it, so that the tests'
 * small runs are cut).
 */
#define PIECE_MIN (1u << 20)

static uint64_t piece_min(void)
{
	const char *hook = getenv("WEFT_TEST_ROSS_PIECE_MIN");
	char *end;
	unsigned long long v = hook != NULL ? strtoull(hook, &end, 10) : 0;
	return hook != NULL && *end == '\0' && v > 0 ? v : PIECE_MIN;
}

/*
 * The threads the open's scan takes alone: those its analyses will read
 * with (the threads option, WEFT_THREADS, else by the bytes of the files:
 * weft__threads_worth), as many as its largest file has pieces of
 * PIECE_MIN; 1: the scan of one thread.
 */
static int open_threads(const ross_data *d, const weft_open_options *o)
{
	uint64_t bytes = 0, largest = 0;
	for (size_t i = 0; i < d->file_count; i++) {
		struct stat st;
		if (stat(d->files[i].path, &st) != 0 || !S_ISREG(st.st_mode))
			continue; /* the scan says why */
		bytes += (uint64_t)st.st_size;
		if ((uint64_t)st.st_size > largest)
			largest = (uint64_t)st.st_size;
	}
	long n = o->threads > 0 ? o->threads : weft__threads_from_environment();
	if (n <= 0)
		n = weft__threads_worth(bytes, 0, sysconf(_SC_NPROCESSORS_ONLN), WEFT__WORK_LIGHT);
	uint64_t pieces = largest / piece_min();
	if ((uint64_t)n > pieces)
		n = (long)pieces;
	return n > ROSS_GRID ? ROSS_GRID : n > 1 ? (int)n : 1;
}

int weft__ross_scan_piece(weft_trace *trace, uint32_t file, int part, ross_piece *out)
{
	open_ctx c;
	file_scan s;
	memset(&c, 0, sizeof c);
	memset(out, 0, sizeof *out);
	c.trace = trace;
	c.d = trace->backend_data;
	c.quiet = 1;
	int parts = c.d->parts;
	int rc = begin_file(&c, file, &s);
	if (rc == 1) {
		uint64_t size = s.f->size;
		out->size = size;
		rc = size < (uint64_t)parts * piece_min() ? 0
		     : scan_piece(&s, weft__ross_piece_bound(size, part, parts),
				  weft__ross_piece_bound(size, part + 1, parts), out);
		end_file(&s);
	}
	if (rc == WEFT_ENOMEM)
		return rc;
	weft__error_clear(); /* a file that is not ROSS: scanned whole, reported then */
	return 0;
}

/* ---- Building the hierarchy ------------------------------------------------------------------ */

/* Order of streams: by file, then PE > KP > LP, a parent before its children. */
static int stream_compare(const void *a, const void *b)
{
	const ross_key *x = &((const ross_stream *)a)->key;
	const ross_key *y = &((const ross_stream *)b)->key;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->pe != y->pe)
		return x->pe < y->pe ? -1 : 1;
	int xr = x->cls != ROSS_REC_PE, yr = y->cls != ROSS_REC_PE;
	if (xr != yr)
		return xr - yr;
	if (x->kp != y->kp)
		return x->kp < y->kp ? -1 : 1;
	xr = x->cls != ROSS_REC_KP;
	yr = y->cls != ROSS_REC_KP;
	if (xr != yr)
		return xr - yr;
	if (x->lp != y->lp)
		return x->lp < y->lp ? -1 : 1;
	return (int)x->cls - (int)y->cls;
}

/* The nodes made so far for the streams of one file. */
typedef struct tree_state {
	open_ctx *c;
	const ross_file *f;
	uint32_t root;
	int have_pe, have_kp, have_lp;
	uint64_t pe, kp, lp;
	uint32_t pe_node, kp_node, lp_node;
} tree_state;

/* Adds a node "<kind>.<id>" under `parent`. */
static int add_id_node(tree_state *ts, uint32_t parent, const char *kind, uint64_t id,
		       uint32_t *node)
{
	char name[48];
	snprintf(name, sizeof name, "%s.%llu", kind, (unsigned long long)id);
	return weft__trace_add_node(ts->c->trace, parent, kind, name,
				    id <= INT64_MAX ? (int64_t)id : -1, NULL, node);
}

/* The node of PE `pe`, made when it is new. */
static int pe_node(tree_state *ts, uint64_t pe, uint32_t *node)
{
	if (!ts->have_pe || ts->pe != pe) {
		int rc = add_id_node(ts, ts->root, "pe", pe, &ts->pe_node);
		if (rc < 0)
			return rc;
		ts->have_pe = 1;
		ts->pe = pe;
		ts->have_kp = ts->have_lp = 0;
	}
	*node = ts->pe_node;
	return 0;
}

/* The node of KP `kp` of PE `pe`. */
static int kp_node(tree_state *ts, uint64_t pe, uint64_t kp, uint32_t *node)
{
	uint32_t parent;
	int rc = pe_node(ts, pe, &parent);
	if (rc == 0 && (!ts->have_kp || ts->kp != kp)) {
		rc = add_id_node(ts, parent, "kp", kp, &ts->kp_node);
		ts->have_kp = 1;
		ts->kp = kp;
		ts->have_lp = 0;
	}
	*node = ts->kp_node;
	return rc;
}

/* The node of LP `lp` (under its KP, or under the root for event traces). */
static int lp_node(tree_state *ts, const ross_key *k, uint32_t *node)
{
	uint32_t parent = ts->root;
	int rc = k->cls == ROSS_REC_EVENT ? 0 : kp_node(ts, k->pe, k->kp, &parent);
	if (rc == 0 && (!ts->have_lp || ts->lp != k->lp)) {
		rc = add_id_node(ts, parent, "lp", k->lp, &ts->lp_node);
		ts->have_lp = 1;
		ts->lp = k->lp;
	}
	*node = ts->lp_node;
	return rc;
}

/*
 * The node a stream's records go to: the PE, KP or LP node itself, or a
 * child of the LP for the second kind of LP records (a node holds one
 * stream): model samples under `model` in engine files, engine samples
 * under `engine` in model files.
 */
static int stream_node(tree_state *ts, const ross_key *k, uint32_t *node)
{
	int model_file = ts->f->kind == ROSS_KIND_MODEL;
	switch (k->cls) {
	case ROSS_REC_PE:
		return pe_node(ts, k->pe, node);
	case ROSS_REC_KP:
		return kp_node(ts, k->pe, k->kp, node);
	default: {
		uint32_t lp;
		int rc = lp_node(ts, k, &lp);
		int own = k->cls == ROSS_REC_EVENT ||
			  (k->cls == ROSS_REC_MODEL) == model_file;
		if (rc < 0 || own) {
			*node = lp;
			return rc;
		}
		return weft__trace_add_node(ts->c->trace, lp, k->cls == ROSS_REC_MODEL ?
					    "model" : "engine", k->cls == ROSS_REC_MODEL ?
					    "model" : "engine", -1, NULL, node);
	}
	}
}

/* The name of a file's root node: its kind, or its file name when two share it. */
static void root_name(const ross_data *d, const ross_file *f, char *buf, size_t size)
{
	int shared = 0;
	for (size_t i = 0; i < d->file_count; i++)
		if (&d->files[i] != f && d->files[i].readable && d->files[i].kind == f->kind)
			shared = 1;
	if (!shared) {
		snprintf(buf, size, "%s", weft__ross_kind_name(f->kind));
		return;
	}
	size_t n = strlen(f->name);
	if (n > 4 && strcmp(f->name + n - 4, ".bin") == 0)
		n -= 4;
	snprintf(buf, size, "%.*s", (int)n, f->name);
}

/* The root node of a file, its nodes and its weft streams. */
static int build_file(open_ctx *c, uint32_t index, json_t *meta, size_t *next_stream)
{
	ross_data *d = c->d;
	ross_file *f = &d->files[index];
	tree_state ts;
	char name[512];
	memset(&ts, 0, sizeof ts);
	ts.c = c;
	ts.f = f;
	root_name(d, f, name, sizeof name);
	int rc = weft__trace_add_node(c->trace, WEFT_NO_PARENT, "file", name, -1, NULL, &ts.root);
	if (rc == 0)
		rc = weft__trace_set_node_metadata_object(c->trace, ts.root, json_incref(meta));
	f->first_stream = (uint32_t)*next_stream;
	for (; rc == 0 && *next_stream < d->stream_count &&
	       d->streams[*next_stream].key.file == index; (*next_stream)++) {
		const ross_stream *st = &d->streams[*next_stream];
		uint32_t node, si;
		rc = stream_node(&ts, &st->key, &node);
		if (rc == 0) {
			json_t *o = json_object();
			json_object_set_new(o, "records", json_integer((json_int_t)st->records));
			rc = weft__trace_set_node_metadata_object(c->trace, node, o);
		}
		if (rc == 0)
			rc = weft__trace_add_stream(c->trace, node, f->name, f->size, &si);
		if (rc == 0) {
			c->trace->streams[si].finished = f->truncated ? 0 : -1;
			c->trace->streams[si].big_endian = f->parse.big_endian;
		}
	}
	f->stream_count = (uint32_t)(*next_stream - f->first_stream);
	return rc;
}

/* Streams in tree order, then every readable file's nodes. */
static int build_hierarchy(open_ctx *c, json_t **metas)
{
	ross_data *d = c->d;
	if (d->stream_count > 1)
		qsort(d->streams, d->stream_count, sizeof *d->streams, stream_compare);
	int rc = weft__ross_map_rebuild(d);
	size_t next = 0;
	for (uint32_t i = 0; rc == 0 && i < d->file_count; i++)
		if (d->files[i].readable)
			rc = build_file(c, i, metas[i], &next);
	return rc;
}

/* Trace-wide metadata: files, records, clock rate, schema. */
static int set_trace_metadata(open_ctx *c)
{
	size_t readable = 0;
	for (size_t i = 0; i < c->d->file_count; i++)
		readable += c->d->files[i].readable;
	json_t *m = json_object();
	json_object_set_new(m, "files", json_integer((json_int_t)c->d->file_count));
	json_object_set_new(m, "readable_files", json_integer((json_int_t)readable));
	json_object_set_new(m, "records", json_integer((json_int_t)c->records));
	json_object_set_new(m, "clock_rate", c->d->clock_rate > 0 ?
			    json_real(c->d->clock_rate) : json_null());
	json_object_set_new(m, "model_schema", c->d->schemas.section_count > 0 ?
			    json_true() : json_false());
	return weft__trace_set_metadata_object(c->trace, m);
}

/* ---- Backend entry points ---------------------------------------------------------------------- */

/*
 * A directory holding ROSS files, or a `.bin` file whose first records
 * parse (surer when its name is a ROSS name).
 */
static int ross_probe(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return 0;
	if (S_ISDIR(st.st_mode)) {
		char **names = NULL;
		int n = list_directory(path, &names);
		for (int i = 0; i < n; i++)
			free(names[i]);
		free(names);
		weft__error_clear();
		return n > 0 ? 60 : 0;
	}
	size_t len = strlen(path);
	if (!S_ISREG(st.st_mode) || len < 4 || strcmp(path + len - 4, ".bin") != 0)
		return 0;
	const char *slash = strrchr(path, '/');
	ross_kind hint = weft__ross_name_kind(slash != NULL ? slash + 1 : path, NULL);
	weft_mapfile mf;
	ross_detection det;
	int rc = weft__mapfile_open(&mf, path, path, PROBE_WINDOW);
	if (rc == 0) {
		rc = mf.size > 0 ? weft__ross_detect(&mf, 0, hint, -1, &det) : 0;
		weft__mapfile_close(&mf);
	}
	weft__error_clear();
	/* A ROSS name is enough to get the open's explanation of bad data. */
	if (hint != ROSS_KIND_NONE)
		return rc == 1 ? 80 : 30;
	if (rc != 1)
		return 0;
	return det.plausible == det.records && (det.reached_end || det.records >= 8) ? 40 : 0;
}

/* Releases the backend data: files, streams, map, schema. */
static void ross_close(weft_trace *trace)
{
	ross_data *d = trace->backend_data;
	if (d == NULL)
		return;
	for (size_t i = 0; i < d->file_count; i++) {
		free(d->files[i].path);
		free(d->files[i].name);
		free(d->files[i].prefix);
		free(d->files[i].skips);
		free(d->files[i].cuts);
	}
	free(d->files);
	free(d->streams);
	free(d->map);
	free(d->root);
	weft__ross_schema_free(&d->schemas);
	weft__ross_kinds_free(d);
	weft__ross_share_free(d->share);
	free(d);
	trace->backend_data = NULL;
}

/* The ROSS open options: forced kind, clock rate, schema, resync. */
static int apply_options(open_ctx *c, const weft_open_options *o)
{
	ross_data *d = c->d;
	const char *kind = NULL, *schema = NULL;
	double rate = 0;
	int resync = 0;
	int rc = weft__option_text(o, "ross.kind", &kind);
	if (rc == 0)
		rc = weft__option_rate(o, "ross.clock_rate", &rate);
	if (rc == 0)
		rc = weft__option_text(o, "ross.model_schema", &schema);
	if (rc == 0)
		rc = weft__option_bool(o, "ross.resync", &resync);
	if (rc < 0)
		return rc;
	d->forced = kind != NULL ? weft__ross_kind_from_name(kind) : ROSS_KIND_NONE;
	d->clock_rate = rate;
	d->time_scale = rate > 0 ? 1e9 / rate : 1.0;
	d->resync = resync;
	return weft__ross_schema_compile(schema, &d->schemas);
}

/* A reader's share of the read budget, within [64 KiB, ROSS_WINDOW]. */
static uint64_t reader_window(uint64_t budget, size_t readers)
{
	uint64_t window = budget / (readers ? readers : 1);
	return window < MIN_STREAM_WINDOW ? MIN_STREAM_WINDOW :
	       window > ROSS_WINDOW ? ROSS_WINDOW : window;
}

/* Each file's cuts: for the ranks, or for threads (d->grid pieces). */
static int alloc_cuts(ross_data *d)
{
	for (size_t i = 0; i < d->file_count; i++)
		if (d->files[i].cuts == NULL &&
		    (d->files[i].cuts = calloc((size_t)d->grid + 1, sizeof(uint64_t))) == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	return 0;
}

/*
 * Every file scanned here or taken from the ranks' scan, then the
 * hierarchy, the metadata and the window of each reader from the read
 * budget.
 */
int weft__ross_open_finish(weft_trace *trace, const ross_file_scanned *scanned)
{
	open_ctx c;
	memset(&c, 0, sizeof c);
	c.trace = trace;
	c.d = trace->backend_data;
	ross_data *d = c.d;
	d->pending = 0;
	json_t **metas = calloc(d->file_count ? d->file_count : 1, sizeof *metas);
	int rc = metas != NULL ? alloc_cuts(d) : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
							     "out of memory");
	size_t readable = 0;
	for (uint32_t i = 0; rc == 0 && i < d->file_count; i++) {
		rc = scanned != NULL && scanned[i].clean ? install_file(&c, i, &scanned[i], &metas[i])
		     : open_file(&c, i, &metas[i]);
		readable += rc == 0 && d->files[i].readable;
	}
	if (rc == 0 && readable == 0)
		rc = weft__error(WEFT_EFORMAT, d->root, WEFT_NO_OFFSET,
				 "expected ROSS data, found no readable file (see the diagnostics)");
	if (rc == 0)
		rc = build_hierarchy(&c, metas);
	if (rc == 0)
		rc = set_trace_metadata(&c);
	trace->progress.events_total = c.records;
	for (size_t i = 0; metas != NULL && i < d->file_count; i++)
		json_decref(metas[i]);
	free(metas);
	uint64_t budget = trace->options.read_budget_bytes ? trace->options.read_budget_bytes
							   : (32ull << 20);
	d->window = reader_window(budget, d->stream_count);
	d->file_window = reader_window(budget, d->file_count);
	return rc;
}

/*
 * The open: options, the files of the run, the pass over each, the
 * hierarchy. Under a weft_dist of several ranks, the pass waits for them
 * (ross_share.c: each scans a piece of each file).
 */
static int ross_open(weft_trace *trace, const char *path, const weft_open_options *o)
{
	open_ctx c;
	memset(&c, 0, sizeof c);
	c.trace = trace;
	c.d = calloc(1, sizeof *c.d);
	if (c.d == NULL || (c.d->root = strdup(path)) == NULL) {
		free(c.d);
		return weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	}
	trace->backend_data = c.d;
	c.d->parts = o->dist != NULL && o->dist->ranks > 1 ? o->dist->ranks : 1;
	c.d->grid = c.d->parts > 1 ? c.d->parts : ROSS_GRID;
	int rc = apply_options(&c, o);
	if (rc == 0)
		rc = weft__ross_kinds_build(c.d);
	if (rc == 0)
		rc = discover(&c, path);
	if (rc < 0)
		return rc;
	if (c.d->parts > 1) {
		c.d->pending = 1;
		return 0;
	}
	int threads = open_threads(c.d, o);
	if (threads > 1)
		return weft__ross_open_on_threads(trace, threads);
	return weft__ross_open_finish(trace, NULL);
}

/* Fields of ROSS records that identify a sample or give its times. */
static const char *const ross_sample_skip[] = {
	"virtual_time", "real_time", "pe_id", "kp_id", "lp_id", "stats_type",
	"model_size", "model_data_size", NULL
};

/*
 * The event-trace stream of the LP that sent an event-trace record (its
 * source_lp, the first u32 of the record), in the same file; -1 when
 * that LP has no stream (it never received an event).
 */
static int64_t source_lp_stream(const ross_data *d, const weft_event *event)
{
	uint32_t lp;

	if (event->payload_size < 4 || event->stream >= d->stream_count)
		return -1;
	memcpy(&lp, event->payload, 4);
	if (event->flags & WEFT_EVENT_BIG_ENDIAN)
		lp = weft__bswap32(lp);
	ross_key key = d->streams[event->stream].key;
	key.lp = lp;
	return weft__ross_stream_lookup(d, &key);
}

/*
 * weft_event_classify() for ROSS: event-trace records are points (at
 * their virtual receive time, in virtual time) on the destination LP's
 * stream, whose sending end the view draws on the source LP's stream (at
 * the virtual send time); every other record (PE, KP, LP, model
 * samples) is a sample whose measuring fields are counters of its entity.
 */
static void ross_event_classify(const weft_trace *trace, const weft_event *event,
				weft_event_class *out)
{
	out->category = "ross";
	if (event->code_len == 5 && memcmp(event->code, "EVENT", 5) == 0) {
		out->virtual_time_field = "virtual_recv_time";
		out->flow_from_stream = source_lp_stream(trace->backend_data, event);
		out->flow_from_virtual_field = "virtual_send_time";
		return;
	}
	out->role = WEFT_ROLE_SAMPLE;
	out->sample_skip = ross_sample_skip;
	out->virtual_time_field = "virtual_time";
}

/* The ROSS options of weft_open_options_set(). */
static const weft_format_option ross_options[] = {
	{ "ross.kind", "gvt|rt|vt|evtrace|model", "ROSS kind",
	  "the record kind of the run's files (vt: analysis-lps), instead of "
	  "detecting it from the data; setting it chooses the ROSS format", 1 },
	{ "ross.clock_rate", "rate", "clock rate",
	  "the true rate in Hz of the cycle counter that ROSS divided by its "
	  "--clock-rate default of 1e9: times are rescaled to real_time * 1e9 / rate", 0 },
	{ "ross.model_schema", "text", "model schema",
	  "the layout of the model data (\"u32 magic, u32 lpid, i64 count\", "
	  "sections \"MODEL: ...\", or \"@FILE\"; see docs/ross.md)", 0 },
	{ "ross.resync", "bool", "resync setting",
	  "after garbage, look for the next run of valid records, report the bytes "
	  "skipped and go on", 0 },
};

const weft_backend weft__ross_backend = {
	.format = WEFT_FORMAT_ROSS,
	.name = "ross",
	.expected = "a ROSS run directory or .bin file",
	.path_kinds = WEFT__PATH_DIR | WEFT__PATH_FILE,
	.probe = ross_probe,
	.open = ross_open,
	.close = ross_close,
	.file_count = weft__ross_file_count,
	.file_open = weft__ross_file_open,
	.stream_file = weft__ross_stream_file,
	.file_order_default = 1,
	.stream_open = weft__ross_stream_open,
	.stream_next = weft__ross_stream_next,
	.stream_next_batch = weft__ross_stream_next_batch,
	.stream_close = weft__ross_stream_close,
	.event_fields = weft__ross_event_fields,
	.event_classify = ross_event_classify,
	.event_schemas = weft__ross_event_schemas,
	.counts_bytes = 1,
	.dist_open = &weft__ross_dist_open,
	.options = ross_options,
	.option_count = sizeof ross_options / sizeof ross_options[0],
	.readers_share_data = 1,
};
