/* SPDX-License-Identifier: MIT */
/*
 * formats/ross/ross_record.c - one ROSS record at a time: framing and
 * validation of the three record families (sample headers, the 48-byte
 * analysis header, event-trace records) in either byte order, the event
 * time of a record, and the typed fields of an event with the model data
 * as bytes or decoded through the model schema.
 *
 * Every check names the byte offset of the problem, so that a user can
 * look at the file with a hex editor and see what the reader saw. Sizes
 * read from the file are checked against the bytes left before anything
 * is read for them.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/ross/ross_internal.h"

/* ---- Names ------------------------------------------------------------------- */

static const char *const kind_names[] = {
	[ROSS_KIND_GVT] = "gvt", [ROSS_KIND_RT] = "rt", [ROSS_KIND_VT] = "vt",
	[ROSS_KIND_EVTRACE] = "evtrace", [ROSS_KIND_MODEL] = "model",
};

static const char *const class_codes[] = {
	[ROSS_REC_PE] = "PE", [ROSS_REC_KP] = "KP", [ROSS_REC_LP] = "LP",
	[ROSS_REC_MODEL] = "MODEL", [ROSS_REC_ANALYSIS] = "ANALYSIS_MODEL",
	[ROSS_REC_EVENT] = "EVENT",
};

/* The root node name of a kind. */
const char *weft__ross_kind_name(ross_kind kind)
{
	return kind < ROSS_KIND_NONE ? kind_names[kind] : "?";
}

/* Parses the value of the ross_kind open option. */
ross_kind weft__ross_kind_from_name(const char *name)
{
	for (int k = 0; k < ROSS_KIND_NONE; k++)
		if (strcmp(name, kind_names[k]) == 0)
			return (ross_kind)k;
	return ROSS_KIND_NONE;
}

/* vt files interleave analysis headers; evtrace has its own records. */
ross_family weft__ross_kind_family(ross_kind kind)
{
	if (kind == ROSS_KIND_VT)
		return ROSS_FAMILY_ANALYSIS;
	if (kind == ROSS_KIND_EVTRACE)
		return ROSS_FAMILY_EVTRACE;
	return ROSS_FAMILY_SAMPLES;
}

/* The event code of a record class. */
const char *weft__ross_class_code(ross_class cls)
{
	return cls < ROSS_REC_COUNT ? class_codes[cls] : "?";
}

/* Its length (the readers fill one event per record: no strlen there). */
uint32_t weft__ross_class_code_len(ross_class cls)
{
	static const uint8_t lens[] = {
		[ROSS_REC_PE] = 2, [ROSS_REC_KP] = 2, [ROSS_REC_LP] = 2,
		[ROSS_REC_MODEL] = 5, [ROSS_REC_ANALYSIS] = 14, [ROSS_REC_EVENT] = 5,
	};
	return cls < ROSS_REC_COUNT ? lens[cls] : 1;
}

/* ---- Loading values in the file's byte order ------------------------------------ */

/* Loads a u32 in the file's byte order. */
static inline uint32_t ld32(const uint8_t *p, int be)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return be ? weft__bswap32(v) : v;
}

/* Loads a u64 in the file's byte order. */
static inline uint64_t ld64(const uint8_t *p, int be)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return be ? weft__bswap64(v) : v;
}

/* Loads an f64 in the file's byte order. */
static inline double ldf64(const uint8_t *p, int be)
{
	uint64_t bits = ld64(p, be);
	double d;
	memcpy(&d, &bits, sizeof d);
	return d;
}

/* Loads an f32 in the file's byte order, widened. */
static inline double ldf32(const uint8_t *p, int be)
{
	uint32_t bits = ld32(p, be);
	float f;
	memcpy(&f, &bits, sizeof f);
	return f;
}

/* ---- Plausibility (strict checks: detection and resync) ----------------------------- */

/*
 * A time in seconds or virtual time units that a real run writes: finite,
 * not negative, and either 0 or not tiny (byte-swapped or shifted data
 * gives denormals and values like 1e-300).
 */
static int plausible_value(double x)
{
	return isfinite(x) && x >= 0 && (x == 0 || x >= 1e-20);
}

/* Virtual times may also be "end" (DBL_MAX, or infinity as a float). */
static int plausible_virtual(double x)
{
	return x == DBL_MAX || x == INFINITY || plausible_value(x);
}

/*
 * Real times count seconds of a cycle counter since boot: above 0 (which
 * also keeps zero-filled bytes from looking like records) and far below
 * 1e12.
 */
static int plausible_real(double x)
{
	return plausible_value(x) && x > 0 && x < 1e12;
}

/* ---- Parsing ---------------------------------------------------------------------------- */

/* Records why a record is cut short (when messages are wanted). */
static ross_parse_status truncated(const ross_parse_ctx *ctx, uint64_t offset,
				   const char *what, uint64_t need, uint64_t left)
{
	if (ctx->file != NULL)
		weft__error(WEFT_ETRUNCATED, ctx->file, offset,
			    "expected %s of %llu bytes, the file ends after %llu",
			    what, (unsigned long long)need, (unsigned long long)left);
	return ROSS_PARSE_TRUNCATED;
}

/* Body size of a sample header's (type, size), or 0 when they do not match. */
static uint32_t sample_body(int32_t type, int32_t size)
{
	switch (type) {
	case 0: return size == (int32_t)ROSS_PE_BODY ? ROSS_PE_BODY : 0;
	case 1: return size == (int32_t)ROSS_KP_BODY ? ROSS_KP_BODY : 0;
	case 2: return size == (int32_t)ROSS_LP_BODY || size == (int32_t)ROSS_LP_OLD_BODY ?
		       (uint32_t)size : 0;
	case 3: return size == (int32_t)ROSS_MODEL_HEADER ? ROSS_MODEL_HEADER : 0;
	default: return 0;
	}
}

/*
 * Checks a model data size read at `at` (the size field's offset): within
 * the bound and within the file. `fixed` bytes precede the data.
 */
static ross_parse_status check_data_size(const ross_parse_ctx *ctx, uint64_t offset,
					 uint32_t at, uint64_t fixed, uint64_t size,
					 uint64_t left)
{
	if (size > ROSS_MAX_MODEL_DATA) {
		if (ctx->file != NULL)
			weft__error(WEFT_EFORMAT, ctx->file, offset + at,
				    "expected a model data size of at most %u bytes, found %llu",
				    ROSS_MAX_MODEL_DATA, (unsigned long long)size);
		return ROSS_PARSE_BAD;
	}
	if (size > left - fixed) {
		if (ctx->file != NULL)
			weft__error(WEFT_ETRUNCATED, ctx->file, offset + at,
				    "expected %llu bytes of model data, the file ends after %llu",
				    (unsigned long long)size, (unsigned long long)(left - fixed));
		return ROSS_PARSE_TRUNCATED;
	}
	return ROSS_PARSE_OK;
}

/* The ids and model data size of a sample, from its body. */
static ross_parse_status sample_body_fields(const ross_parse_ctx *ctx, const uint8_t *p,
					    uint64_t left, uint64_t offset, ross_record *rec)
{
	int be = ctx->big_endian;
	const uint8_t *b = p + ROSS_SAMPLE_HEADER;
	rec->pe = ld32(b, be);
	if (rec->cls != ROSS_REC_PE)
		rec->kp = ld32(b + 4, be);
	if (rec->cls == ROSS_REC_LP || rec->cls == ROSS_REC_MODEL)
		rec->lp = ld32(b + 8, be);
	if (rec->cls != ROSS_REC_MODEL)
		return ROSS_PARSE_OK;
	uint64_t data = ld32(b + 20, be);
	ross_parse_status st = check_data_size(ctx, offset, ROSS_SAMPLE_HEADER + 20,
					       rec->fixed, data, left);
	if (st != ROSS_PARSE_OK)
		return st;
	rec->data_size = data;
	rec->size += data;
	if (data > ROSS_STRICT_MODEL_DATA)
		rec->plausible = 0;
	return ROSS_PARSE_OK;
}

/* A record behind a 24-byte sample header whose (type, size) matched. */
static ross_parse_status parse_sample(const ross_parse_ctx *ctx, const uint8_t *p,
				      uint64_t left, uint64_t offset, int32_t type,
				      uint32_t body, ross_record *rec)
{
	static const ross_class classes[] = { ROSS_REC_PE, ROSS_REC_KP, ROSS_REC_LP,
					      ROSS_REC_MODEL };
	rec->cls = classes[type];
	rec->fixed = ROSS_SAMPLE_HEADER + body;
	rec->size = rec->fixed;
	if (left < rec->fixed) {
		char what[48];
		snprintf(what, sizeof what, "a %s record", class_codes[rec->cls]);
		return truncated(ctx, offset, what, rec->fixed, left);
	}
	rec->virtual_time = ldf64(p + 8, ctx->big_endian);
	rec->real_time = ldf64(p + 16, ctx->big_endian);
	rec->plausible = plausible_virtual(rec->virtual_time) && plausible_real(rec->real_time);
	return sample_body_fields(ctx, p, left, offset, rec);
}

/* A record behind a 48-byte analysis header (flag 3 at +44). */
static ross_parse_status parse_analysis(const ross_parse_ctx *ctx, const uint8_t *p,
					uint64_t left, uint64_t offset, ross_record *rec)
{
	int be = ctx->big_endian;
	if (left < ROSS_ANALYSIS_HEADER)
		return truncated(ctx, offset, "a sample header (24 bytes) or an analysis header",
				 ROSS_ANALYSIS_HEADER, left);
	int32_t flag = (int32_t)ld32(p + 44, be);
	int32_t size = (int32_t)ld32(p + 40, be);
	if (flag != ROSS_ANALYSIS_FLAG) {
		if (ctx->file != NULL)
			weft__error(WEFT_EFORMAT, ctx->file, offset,
				    "expected a sample header (type 0 PE/104, 1 KP/44, 2 LP/36 "
				    "or 48, 3 model/24) or an analysis header (flag 3 at +44), "
				    "found type %d, size %d, flag %d",
				    (int32_t)ld32(p, be), (int32_t)ld32(p + 4, be), flag);
		return ROSS_PARSE_BAD;
	}
	rec->cls = ROSS_REC_ANALYSIS;
	rec->fixed = ROSS_ANALYSIS_HEADER;
	rec->size = rec->fixed;
	if (size < 0) {
		if (ctx->file != NULL)
			weft__error(WEFT_EFORMAT, ctx->file, offset + 40,
				    "expected an analysis sample size of 0 to %u bytes, found %d",
				    ROSS_MAX_MODEL_DATA, size);
		return ROSS_PARSE_BAD;
	}
	ross_parse_status st = check_data_size(ctx, offset, 40, rec->fixed,
					       (uint64_t)size, left);
	if (st != ROSS_PARSE_OK)
		return st;
	rec->data_size = (uint64_t)size;
	rec->size += rec->data_size;
	rec->lp = ld64(p, be);
	rec->kp = ld64(p + 8, be);
	rec->pe = ld64(p + 16, be);
	rec->virtual_time = ldf64(p + 24, be);
	rec->real_time = ldf64(p + 32, be); /* ROSS never sets it */
	rec->plausible = plausible_virtual(rec->virtual_time) && rec->lp <= UINT32_MAX &&
			 rec->kp <= UINT32_MAX && rec->pe <= UINT32_MAX &&
			 rec->data_size <= ROSS_STRICT_MODEL_DATA;
	return ROSS_PARSE_OK;
}

/* A record of a sample file, or of an analysis-lps file when `analysis`. */
static ross_parse_status parse_samples(const ross_parse_ctx *ctx, const uint8_t *p,
				       uint64_t left, uint64_t offset, int analysis,
				       ross_record *rec)
{
	if (left < ROSS_SAMPLE_HEADER)
		return truncated(ctx, offset, "a sample header", ROSS_SAMPLE_HEADER, left);
	int32_t type = (int32_t)ld32(p, ctx->big_endian);
	int32_t size = (int32_t)ld32(p + 4, ctx->big_endian);
	uint32_t body = sample_body(type, size);
	if (body != 0)
		return parse_sample(ctx, p, left, offset, type, body, rec);
	if (analysis)
		return parse_analysis(ctx, p, left, offset, rec);
	if (ctx->file != NULL)
		weft__error(WEFT_EFORMAT, ctx->file, offset,
			    "expected a sample header (type 0 PE with size 104, 1 KP 44, "
			    "2 LP 36 or 48, 3 model 24), found type %d with size %d",
			    type, size);
	return ROSS_PARSE_BAD;
}

/* An event-trace record: 24 bytes, then its model data. */
static ross_parse_status parse_event(const ross_parse_ctx *ctx, const uint8_t *p,
				     uint64_t left, uint64_t offset, ross_record *rec)
{
	int be = ctx->big_endian;
	rec->cls = ROSS_REC_EVENT;
	rec->fixed = ROSS_EVENT_HEADER;
	rec->size = rec->fixed;
	if (left < ROSS_EVENT_HEADER)
		return truncated(ctx, offset, "an event record", ROSS_EVENT_HEADER, left);
	ross_parse_status st = check_data_size(ctx, offset, 20, rec->fixed,
					       ld32(p + 20, be), left);
	if (st != ROSS_PARSE_OK)
		return st;
	rec->data_size = ld32(p + 20, be);
	rec->size += rec->data_size;
	rec->lp = ld32(p + 4, be); /* filed at the LP that processed it */
	double send = ldf32(p + 8, be), recv = ldf32(p + 12, be);
	rec->virtual_time = send;
	rec->recv_time = recv;
	rec->real_time = ldf32(p + 16, be);
	rec->plausible = plausible_virtual(send) && plausible_virtual(recv) && recv >= send &&
			 plausible_real(rec->real_time) &&
			 rec->data_size <= ROSS_STRICT_MODEL_DATA;
	return ROSS_PARSE_OK;
}

/* Dispatches on the framing of the file (see the header). */
ross_parse_status weft__ross_parse(const ross_parse_ctx *ctx, const uint8_t *p,
				   uint64_t have, uint64_t left, uint64_t offset,
				   ross_record *rec)
{
	memset(rec, 0, sizeof *rec);
	/* The fixed parts are checked against `left`: all of them must be
	 * readable, which the callers ensure by mapping the head. */
	if (have < (left < ROSS_HEAD_MAX ? left : ROSS_HEAD_MAX)) {
		if (ctx->file != NULL)
			weft__error(WEFT_EINVAL, ctx->file, offset,
				    "internal: %llu bytes in the window for a record head",
				    (unsigned long long)have);
		return ROSS_PARSE_BAD;
	}
	if (left == 0)
		return ROSS_PARSE_END;
	switch (ctx->family) {
	case ROSS_FAMILY_EVTRACE:
		return parse_event(ctx, p, left, offset, rec);
	case ROSS_FAMILY_ANALYSIS:
		return parse_samples(ctx, p, left, offset, 1, rec);
	default:
		return parse_samples(ctx, p, left, offset, 0, rec);
	}
}

/*
 * Maps the head of the record, parses it, then maps all of it when its
 * model data goes past the head: sizes are checked before any mapping.
 */
ross_parse_status weft__ross_read(const ross_parse_ctx *ctx, weft_mapfile *mf,
				  uint64_t offset, uint64_t end, ross_record *rec,
				  const uint8_t **bytes)
{
	uint64_t left = offset < end ? end - offset : 0;
	uint64_t head = left < ROSS_HEAD_MAX ? left : ROSS_HEAD_MAX;
	const uint8_t *p = weft__mapfile_get(mf, offset, head);
	if (p == NULL)
		return ROSS_PARSE_IO;
	ross_parse_status st = weft__ross_parse(ctx, p, head, left, offset, rec);
	if (st != ROSS_PARSE_OK)
		return st;
	if (rec->size > head && (p = weft__mapfile_get(mf, offset, rec->size)) == NULL)
		return ROSS_PARSE_IO;
	*bytes = p;
	return ROSS_PARSE_OK;
}

/* ---- Framing for the readers ------------------------------------------------------------ */

/*
 * A model data size at `at` of a record with `fixed` bytes before it:
 * within the bound and the bytes left, else 0 (the caller says BAD).
 */
static inline int frame_data(ross_record *rec, uint64_t size, uint64_t left)
{
	if (size > ROSS_MAX_MODEL_DATA || size > left - rec->fixed)
		return 0;
	rec->data_size = size;
	rec->size = rec->fixed + size;
	return 1;
}

/* A record of a sample or analysis-lps file (see weft__ross_frame). */
static ross_parse_status frame_sample(const ross_parse_ctx *ctx, const uint8_t *p,
				      uint64_t left, ross_record *rec)
{
	static const ross_class classes[] = { ROSS_REC_PE, ROSS_REC_KP, ROSS_REC_LP,
					      ROSS_REC_MODEL };
	int be = ctx->big_endian;
	int32_t type = (int32_t)ld32(p, be);
	uint32_t body = sample_body(type, (int32_t)ld32(p + 4, be));
	if (body == 0) {
		if (ctx->family != ROSS_FAMILY_ANALYSIS || left < ROSS_ANALYSIS_HEADER ||
		    (int32_t)ld32(p + 44, be) != ROSS_ANALYSIS_FLAG)
			return ROSS_PARSE_BAD;
		int32_t size = (int32_t)ld32(p + 40, be);
		rec->cls = ROSS_REC_ANALYSIS;
		rec->fixed = ROSS_ANALYSIS_HEADER;
		rec->lp = ld64(p, be);
		rec->kp = ld64(p + 8, be);
		rec->pe = ld64(p + 16, be);
		rec->real_time = ldf64(p + 32, be);
		return size >= 0 && frame_data(rec, (uint64_t)size, left) ? ROSS_PARSE_OK :
		       ROSS_PARSE_BAD;
	}
	rec->cls = classes[type];
	rec->fixed = ROSS_SAMPLE_HEADER + body;
	rec->size = rec->fixed;
	rec->data_size = 0;
	if (left < rec->fixed)
		return ROSS_PARSE_TRUNCATED;
	rec->real_time = ldf64(p + 16, be);
	rec->pe = ld32(p + 24, be);
	rec->kp = rec->cls != ROSS_REC_PE ? ld32(p + 28, be) : 0;
	rec->lp = rec->cls == ROSS_REC_LP || rec->cls == ROSS_REC_MODEL ? ld32(p + 32, be) : 0;
	if (rec->cls == ROSS_REC_MODEL && !frame_data(rec, ld32(p + 44, be), left))
		return ROSS_PARSE_BAD;
	return ROSS_PARSE_OK;
}

/*
 * The framing of the record at p for the readers: its class, sizes, ids
 * and real time, nothing else (no virtual times, no plausibility, no
 * message). The open scan validated these bytes with weft__ross_parse()
 * and this frames them the same way; anything unexpected means the file
 * changed since, which the caller reports. Needs `left` bytes left and at
 * least min(left, ROSS_HEAD_MAX) of them readable at p.
 */
ross_parse_status weft__ross_frame(const ross_parse_ctx *ctx, const uint8_t *p,
				   uint64_t left, ross_record *rec)
{
	if (left < ROSS_SAMPLE_HEADER) /* 24: also an event record's header */
		return left == 0 ? ROSS_PARSE_END : ROSS_PARSE_TRUNCATED;
	if (ctx->family != ROSS_FAMILY_EVTRACE)
		return frame_sample(ctx, p, left, rec);
	int be = ctx->big_endian;
	rec->cls = ROSS_REC_EVENT;
	rec->fixed = ROSS_EVENT_HEADER;
	rec->pe = rec->kp = 0;
	rec->lp = ld32(p + 4, be);
	rec->real_time = ldf32(p + 16, be);
	return frame_data(rec, ld32(p + 20, be), left) ? ROSS_PARSE_OK : ROSS_PARSE_BAD;
}

/*
 * ns = seconds * 1e9 * scale, rounded to the nearest ns. NaN and negative
 * values become 0, values past 2^64 - 1 ns become UINT64_MAX.
 */
uint64_t weft__ross_time_ns(double seconds, double scale, int *clamped)
{
	double ns = seconds * 1e9 * scale;
	if (!(ns >= 0)) {
		*clamped = 1;
		return 0;
	}
	if (ns >= 18446744073709549568.0) {
		*clamped = 1;
		return UINT64_MAX;
	}
	return (uint64_t)(ns + 0.5);
}

/* ---- Typed fields ------------------------------------------------------------------------- */

typedef struct field_def {
	const char *name;
	uint8_t name_len;
	uint8_t type;    /* weft_type */
	uint8_t offset;  /* in the record */
} field_def;

#define FD(n, t, o) { n, sizeof(n) - 1, WEFT_TYPE_##t, o }
/*
 * Each layout is one list of X(name, type, offset); it gives the table of
 * offsets and types, and the fields as returned (every member but the
 * value), copied in one block per record.
 */
#define AS_DEF(n, t, o) FD(n, t, o),
#define AS_TMPL(n, t, o) { .name = n, .name_len = sizeof(n) - 1, .type = WEFT_TYPE_##t, \
			   .count = 1 },

#define PE_LIST(X) \
	X("virtual_time", F64, 8) X("real_time", F64, 16) X("pe_id", U32, 24) \
	X("events_processed", U32, 28) X("events_aborted", U32, 32) \
	X("events_rolled_back", U32, 36) X("total_rollbacks", U32, 40) \
	X("secondary_rollbacks", U32, 44) X("fossil_collect_attempts", U32, 48) \
	X("priority_queue_size", U32, 52) X("network_sends", U32, 56) \
	X("network_receives", U32, 60) X("num_gvts", U32, 64) X("pe_event_ties", U32, 68) \
	X("all_reduce_count", U32, 72) X("efficiency", F32, 76) \
	X("network_read_time", F32, 80) X("network_other_time", F32, 84) \
	X("gvt_time", F32, 88) X("fossil_collect_time", F32, 92) \
	X("events_aborted_time", F32, 96) X("events_processed_time", F32, 100) \
	X("priority_queue_time", F32, 104) X("rollback_time", F32, 108) \
	X("cancel_q_time", F32, 112) X("avl_tree_time", F32, 116) X("buddy_time", F32, 120) \
	X("lz4_time", F32, 124)
static const field_def pe_fields[] = { PE_LIST(AS_DEF) };
static const weft_field pe_tmpl[] = { PE_LIST(AS_TMPL) };

#define KP_LIST(X) \
	X("virtual_time", F64, 8) X("real_time", F64, 16) X("pe_id", U32, 24) \
	X("kp_id", U32, 28) X("events_processed", U32, 32) X("events_aborted", U32, 36) \
	X("events_rolled_back", U32, 40) X("total_rollbacks", U32, 44) \
	X("secondary_rollbacks", U32, 48) X("network_sends", U32, 52) \
	X("network_receives", U32, 56) X("time_ahead_gvt", F32, 60) X("efficiency", F32, 64)
static const field_def kp_fields[] = { KP_LIST(AS_DEF) };
static const weft_field kp_tmpl[] = { KP_LIST(AS_TMPL) };

/* Current ROSS (48 bytes): a u64 ROSS never fills, then efficiency. */
#define LP_LIST(X) \
	X("virtual_time", F64, 8) X("real_time", F64, 16) X("pe_id", U32, 24) \
	X("kp_id", U32, 28) X("lp_id", U32, 32) X("events_processed", U32, 36) \
	X("events_aborted", U32, 40) X("events_rolled_back", U32, 44) \
	X("network_sends", U32, 48) X("network_receives", U32, 52) \
	X("process_event_time_raw", U64, 56) X("efficiency", F32, 64)
static const field_def lp_fields[] = { LP_LIST(AS_DEF) };
static const weft_field lp_tmpl[] = { LP_LIST(AS_TMPL) };

/* Older ROSS (36 bytes). */
#define LP_OLD_LIST(X) \
	X("virtual_time", F64, 8) X("real_time", F64, 16) X("pe_id", U32, 24) \
	X("kp_id", U32, 28) X("lp_id", U32, 32) X("events_processed", U32, 36) \
	X("events_aborted", U32, 40) X("events_rolled_back", U32, 44) \
	X("network_sends", U32, 48) X("network_receives", U32, 52) X("efficiency", F32, 56)
static const field_def lp_old_fields[] = { LP_OLD_LIST(AS_DEF) };
static const weft_field lp_old_tmpl[] = { LP_OLD_LIST(AS_TMPL) };

#define MODEL_LIST(X) \
	X("virtual_time", F64, 8) X("real_time", F64, 16) X("pe_id", U32, 24) \
	X("kp_id", U32, 28) X("lp_id", U32, 32) X("gvt", F32, 36) X("stats_type", I32, 40) \
	X("model_size", U32, 44)
static const field_def model_fields[] = { MODEL_LIST(AS_DEF) };
static const weft_field model_tmpl[] = { MODEL_LIST(AS_TMPL) };

#define ANALYSIS_LIST(X) \
	X("lp_id", U64, 0) X("kp_id", U64, 8) X("pe_id", U64, 16) X("virtual_time", F64, 24) \
	X("real_time", F64, 32) X("sample_size", I32, 40)
static const field_def analysis_fields[] = { ANALYSIS_LIST(AS_DEF) };
static const weft_field analysis_tmpl[] = { ANALYSIS_LIST(AS_TMPL) };

#define EVENT_LIST(X) \
	X("source_lp", U32, 0) X("destination_lp", U32, 4) X("virtual_send_time", F32, 8) \
	X("virtual_recv_time", F32, 12) X("real_time", F32, 16) X("model_data_size", U32, 20)
static const field_def event_fields[] = { EVENT_LIST(AS_DEF) };
static const weft_field event_tmpl[] = { EVENT_LIST(AS_TMPL) };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The layout of an event: its fixed fields and whether model data follows. */
typedef struct layout {
	ross_class cls;
	const field_def *defs;
	const weft_field *tmpl;
	size_t count;
	uint32_t fixed;
} layout;

/* 1 when the event's code is `code` (class code, length known). */
static inline int code_is(const weft_event *ev, ross_class cls)
{
	if (ev->code == class_codes[cls]) /* the readers' events point at the table */
		return 1;
	return ev->code_len == weft__ross_class_code_len(cls) &&
	       memcmp(ev->code, class_codes[cls], ev->code_len) == 0;
}

/* Every record layout, in the order of the event kinds (weft/schema.h). */
enum { K_PE, K_KP, K_LP, K_LP_OLD, K_MODEL, K_ANALYSIS, K_EVENT };
static const layout layouts[ROSS_KIND_COUNT] = {
	[K_PE] = { ROSS_REC_PE, pe_fields, pe_tmpl, COUNT(pe_fields),
		   ROSS_SAMPLE_HEADER + ROSS_PE_BODY },
	[K_KP] = { ROSS_REC_KP, kp_fields, kp_tmpl, COUNT(kp_fields),
		   ROSS_SAMPLE_HEADER + ROSS_KP_BODY },
	[K_LP] = { ROSS_REC_LP, lp_fields, lp_tmpl, COUNT(lp_fields),
		   ROSS_SAMPLE_HEADER + ROSS_LP_BODY },
	[K_LP_OLD] = { ROSS_REC_LP, lp_old_fields, lp_old_tmpl, COUNT(lp_old_fields),
		       ROSS_SAMPLE_HEADER + ROSS_LP_OLD_BODY },
	[K_MODEL] = { ROSS_REC_MODEL, model_fields, model_tmpl, COUNT(model_fields),
		      ROSS_SAMPLE_HEADER + ROSS_MODEL_HEADER },
	[K_ANALYSIS] = { ROSS_REC_ANALYSIS, analysis_fields, analysis_tmpl,
			 COUNT(analysis_fields), ROSS_ANALYSIS_HEADER },
	[K_EVENT] = { ROSS_REC_EVENT, event_fields, event_tmpl, COUNT(event_fields),
		      ROSS_EVENT_HEADER },
};

/*
 * Finds the layout of an event from its payload size (the fixed part of
 * each record kind), then checks the code: one switch, no search.
 */
static int event_layout(const weft_event *ev, layout *out)
{
	const layout *l;
	switch (ev->payload_size) {
	case ROSS_SAMPLE_HEADER + ROSS_PE_BODY: l = &layouts[K_PE]; break;
	case ROSS_SAMPLE_HEADER + ROSS_KP_BODY: l = &layouts[K_KP]; break;
	case ROSS_SAMPLE_HEADER + ROSS_LP_BODY: l = &layouts[K_LP]; break;
	case ROSS_SAMPLE_HEADER + ROSS_LP_OLD_BODY: l = &layouts[K_LP_OLD]; break;
	case ROSS_EVENT_HEADER: l = &layouts[K_EVENT]; break;
	case ROSS_ANALYSIS_HEADER: /* MODEL's fixed part has the same size */
		l = code_is(ev, ROSS_REC_MODEL) ? &layouts[K_MODEL] : &layouts[K_ANALYSIS];
		break;
	default: return -1;
	}
	if (!code_is(ev, l->cls))
		return -1;
	*out = *l;
	return 0;
}

/*
 * The value of one fixed field of a record (the rest of the field comes
 * from the layout's template): the hot path of every reader of ROSS
 * fields, no strlen and no call per field.
 */
static inline void set_value(weft_field *f, const field_def *d, const uint8_t *payload, int be)
{
	const uint8_t *p = payload + d->offset;
	switch (d->type) {
	case WEFT_TYPE_U32: f->v.u = ld32(p, be); break;
	case WEFT_TYPE_I32: f->v.i = (int32_t)ld32(p, be); break;
	case WEFT_TYPE_F32: f->v.f = ldf32(p, be); break;
	case WEFT_TYPE_F64: f->v.f = ldf64(p, be); break;
	default: f->v.u = ld64(p, be); break; /* U64 */
	}
}

/* Sets the name of a field from a NUL-terminated string. */
static void set_name(weft_field *f, const char *name)
{
	f->name = name;
	f->name_len = (uint32_t)strlen(name);
	f->raw = NULL;
	f->raw_size = 0;
	f->big_endian = 0;
}

/* A bytes field (model data, or what the schema leaves over). */
static void set_bytes(weft_field *f, const char *name, const uint8_t *p, uint64_t n)
{
	set_name(f, name);
	f->type = WEFT_TYPE_BYTES;
	f->is_array = 0;
	f->count = 1;
	f->v.s.ptr = (const char *)p;
	f->v.s.len = (size_t)n;
}

/* The data file of an event's stream, for messages. */
static const char *event_file(const weft_trace *trace, const weft_event *ev)
{
	return ev->stream < trace->stream_count ? trace->streams[ev->stream].file : trace->path;
}

/*
 * The model data decoded through the schema: its fields, then `rest`
 * when there are more bytes. Data shorter than the schema is an error.
 */
static int schema_fields(const weft_trace *trace, const weft_event *ev,
			 const ross_schema *s, weft_field *out, size_t cap, size_t k)
{
	int be = (ev->flags & WEFT_EVENT_BIG_ENDIAN) != 0;
	if (ev->data_size < s->size)
		return weft__error(WEFT_EFORMAT, event_file(trace, ev),
				   ev->offset + ev->payload_size,
				   "expected %u bytes of model data for the model schema of "
				   "%.*s records, found %llu", s->size, (int)ev->code_len,
				   ev->code, (unsigned long long)ev->data_size);
	for (uint32_t i = 0; i < s->count; i++, k++) {
		if (k >= cap)
			continue;
		set_name(&out[k], s->fields[i].name);
		weft__field_set_scalar(&out[k], s->fields[i].type,
				       ev->data + s->fields[i].offset, be);
	}
	if (ev->data_size > s->size) {
		if (k < cap)
			set_bytes(&out[k], "rest", ev->data + s->size, ev->data_size - s->size);
		k++;
	}
	return (int)k;
}

/*
 * The fixed fields of the record's layout, then its model data: a bytes
 * field, or the schema's fields.
 */
int weft__ross_event_fields(const weft_trace *trace, const weft_event *ev,
			    weft_field *out, size_t cap)
{
	const ross_data *d = trace->backend_data;
	int be = (ev->flags & WEFT_EVENT_BIG_ENDIAN) != 0;
	layout l;
	if (event_layout(ev, &l) < 0)
		return weft__error(WEFT_EFORMAT, event_file(trace, ev), ev->offset,
				   "expected a ROSS record, found code %.*s with %u bytes",
				   (int)ev->code_len, ev->code, ev->payload_size);
	size_t k = l.count, n = cap < l.count ? cap : l.count;
	memcpy(out, l.tmpl, n * sizeof *out);
	for (size_t i = 0; i < n; i++)
		set_value(&out[i], &l.defs[i], ev->payload, be);
	if (l.cls != ROSS_REC_MODEL && l.cls != ROSS_REC_ANALYSIS && l.cls != ROSS_REC_EVENT)
		return (int)k;
	const ross_schema *s = d != NULL ? d->schemas.by_class[l.cls] : NULL;
	if (s != NULL)
		return schema_fields(trace, ev, s, out, cap, k);
	if (k < cap)
		set_bytes(&out[k], "model_data", ev->data, ev->data_size);
	return (int)k + 1;
}

/* ---- Event kinds (weft/schema.h) -------------------------------------------------------- */

/* The model data fields of a layout: the schema's and `rest`, or `model_data`. */
static size_t data_field_count(const ross_data *d, const layout *l)
{
	if (l->cls != ROSS_REC_MODEL && l->cls != ROSS_REC_ANALYSIS && l->cls != ROSS_REC_EVENT)
		return 0;
	const ross_schema *s = d->schemas.by_class[l->cls];
	return s != NULL ? s->count + 1u : 1u;
}

/* A field of a kind. */
static weft_field_schema field_schema(const char *name, weft_type type, int variable,
				      int in_data)
{
	return (weft_field_schema){ name, type, 0, variable, in_data };
}

/*
 * One kind per layout, with the fields weft__ross_event_fields() gives
 * its records: the fixed ones, then the model data decoded by the schema
 * (and what is left over, `rest`, when a record has more), or as bytes.
 */
int weft__ross_kinds_build(ross_data *d)
{
	size_t total = 0;
	for (size_t i = 0; i < ROSS_KIND_COUNT; i++)
		total += layouts[i].count + data_field_count(d, &layouts[i]);
	d->kind_fields = calloc(total, sizeof *d->kind_fields);
	if (d->kind_fields == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for the event kinds of a ROSS run");
	weft_field_schema *f = d->kind_fields;
	for (size_t i = 0; i < ROSS_KIND_COUNT; i++) {
		const layout *l = &layouts[i];
		const ross_schema *s = d->schemas.by_class[l->cls];
		weft_event_schema *k = &d->kinds[i];
		*k = (weft_event_schema){ class_codes[l->cls], l->fixed,
			l->cls == ROSS_REC_EVENT ? WEFT_ROLE_POINT : WEFT_ROLE_SAMPLE, "ross",
			0, l->count + data_field_count(d, l), f, 0 };
		for (size_t j = 0; j < l->count; j++)
			*f++ = field_schema(l->defs[j].name, (weft_type)l->defs[j].type, 0, 0);
		if (data_field_count(d, l) == 0)
			continue;
		if (s == NULL) {
			*f++ = field_schema("model_data", WEFT_TYPE_BYTES, 1, 1);
			continue;
		}
		for (uint32_t j = 0; j < s->count; j++)
			*f++ = field_schema(s->fields[j].name, s->fields[j].type, 0, 1);
		*f++ = field_schema("rest", WEFT_TYPE_BYTES, 1, 1);
		k->data_size = s->size;
	}
	return 0;
}

void weft__ross_kinds_free(ross_data *d)
{
	free(d->kind_fields);
	d->kind_fields = NULL;
}

size_t weft__ross_event_schemas(const weft_trace *trace, const weft_event_schema **out)
{
	const ross_data *d = trace->backend_data;
	if (d == NULL || d->kind_fields == NULL)
		return 0;
	*out = d->kinds;
	return ROSS_KIND_COUNT;
}
