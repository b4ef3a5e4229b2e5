/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_thread.c - the grammar of one thread
 * (thread.pallas): header, events with their attribute bytes and timestamp
 * vector headers, sequences with their three vector headers, loops, and
 * the id maps. Everything stays in the file buffer; the tables hold
 * pointers into it. Every token is checked against the tables here, so
 * that the replay (pallas_stream.c) can index without checks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pallas/pallas_internal.h"

/* Thread files hold the grammar and the vector headers only. */
#define THREAD_FILE_MAX ((uint64_t)1 << 32)
#define TS_SUB_SIZE 32
#define DUR_SUB_SIZE 40

void weft__pallas_vector_sub(const pallas_vector *v, uint64_t i,
			     pallas_subarray *out)
{
	memset(out, 0, sizeof *out);
	if (v->durations) {
		const uint8_t *b = v->subs + i * DUR_SUB_SIZE;
		out->size = weft__pallas_le64(b);
		out->min = weft__pallas_le64(b + 8);
		out->max = weft__pallas_le64(b + 16);
		out->mean = weft__pallas_le64(b + 24);
		out->offset = weft__pallas_le64(b + 32);
	} else {
		const uint8_t *b = v->subs + i * TS_SUB_SIZE;
		out->size = weft__pallas_le64(b);
		out->first = weft__pallas_le64(b + 8);
		out->last = weft__pallas_le64(b + 16);
		out->offset = weft__pallas_le64(b + 24);
	}
}

/*
 * A vector header: u64 size | u64 n_sub, then (durations) u64 min | max |
 * mean, then the sub-array entries. A size of 0 has nothing after it,
 * whatever n_sub says (Pallas writes 1 there: the empty sub-array it
 * starts with): the vector then has no sub-arrays, so that nothing looks
 * for entries that are not there. The sub-array sizes must add up to the
 * size.
 */
static int parse_vector(pallas_in *in, int durations, int which_file,
			pallas_vector *v, const char *what)
{
	uint64_t at = weft__pallas_in_offset(in);
	int rc;
	memset(v, 0, sizeof *v);
	v->durations = (uint8_t)durations;
	v->which_file = (uint8_t)which_file;
	if ((rc = weft__pallas_in_u64(in, &v->size, what)) < 0 ||
	    (rc = weft__pallas_in_u64(in, &v->sub_count, what)) < 0)
		return rc;
	if (v->size == 0) {
		v->sub_count = 0;
		return 0;
	}
	if (durations &&
	    ((rc = weft__pallas_in_u64(in, &v->min, what)) < 0 ||
	     (rc = weft__pallas_in_u64(in, &v->max, what)) < 0 ||
	     (rc = weft__pallas_in_u64(in, &v->mean, what)) < 0))
		return rc;
	uint64_t entry = durations ? DUR_SUB_SIZE : TS_SUB_SIZE;
	if (v->sub_count > weft__pallas_in_left(in) / entry)
		return weft__error(WEFT_EFORMAT, in->file, at,
				   "%s: %llu sub-arrays do not fit in the %llu bytes left",
				   what, (unsigned long long)v->sub_count,
				   (unsigned long long)weft__pallas_in_left(in));
	if ((rc = weft__pallas_in_bytes(in, v->sub_count * entry, &v->subs, what)) < 0)
		return rc;
	uint64_t total = 0;
	for (uint64_t i = 0; i < v->sub_count; i++) {
		pallas_subarray s;
		weft__pallas_vector_sub(v, i, &s);
		if (s.size == 0 || s.size > v->size - total)
			return weft__error(WEFT_EFORMAT, in->file, at,
					   "%s: sub-array %llu holds %llu values, more "
					   "than the %llu the vector has left", what,
					   (unsigned long long)i,
					   (unsigned long long)s.size,
					   (unsigned long long)(v->size - total));
		total += s.size;
	}
	if (total != v->size)
		return weft__error(WEFT_EFORMAT, in->file, at,
				   "%s: sub-arrays hold %llu values, expected %llu",
				   what, (unsigned long long)total,
				   (unsigned long long)v->size);
	return 0;
}

/* The events: i32 record | u8 size | payload | u64 attr bytes | attrs | ts. */
static int parse_events(pallas_in *in, pallas_thread *t)
{
	int rc;
	for (uint64_t i = 0; i < t->event_count; i++) {
		pallas_event_def *e = &t->events[i];
		uint32_t record;
		uint8_t size;
		e->offset = weft__pallas_in_offset(in);
		if ((rc = weft__pallas_in_u32(in, &record, "an event record")) < 0 ||
		    (rc = weft__pallas_in_u8(in, &size, "an event size")) < 0)
			return rc;
		e->record = (int32_t)record;
		e->code = weft__pallas_record_name(e->record);
		if (e->code == NULL)
			e->code = "Unknown";
		e->code_len = (uint32_t)strlen(e->code);
		if (size < WEFT_PALLAS_EVENT_HEADER)
			return weft__error(WEFT_EFORMAT, t->file, e->offset + 4,
					   "event %llu: size %u, expected at least %d",
					   (unsigned long long)i, size,
					   WEFT_PALLAS_EVENT_HEADER);
		e->payload_size = size - WEFT_PALLAS_EVENT_HEADER;
		if ((rc = weft__pallas_in_bytes(in, e->payload_size, &e->payload,
						"an event payload")) < 0 ||
		    (rc = weft__pallas_in_u64(in, &e->attr_size,
					      "an event's attribute size")) < 0 ||
		    (rc = weft__pallas_in_bytes(in, e->attr_size, &e->attrs,
						"an event's attributes")) < 0 ||
		    (rc = parse_vector(in, 0, 0, &e->timestamps,
				       "an event's timestamp vector")) < 0)
			return rc;
		if (e->timestamps.size > UINT64_MAX - t->occurrences)
			return weft__error(WEFT_EFORMAT, t->file, e->offset,
					   "event occurrence counts overflow");
		t->occurrences += e->timestamps.size;
		if (e->timestamps.sub_count > 0) {
			pallas_subarray s;
			weft__pallas_vector_sub(&e->timestamps,
						e->timestamps.sub_count - 1, &s);
			if (s.last > t->last_timestamp)
				t->last_timestamp = s.last;
		}
	}
	return 0;
}

/*
 * An id map: u64 n | u32[n], Pallas's logical id -> table index. Pallas
 * 0.20 writes the identity (dead loop slots: 0xFFFFFFFF) and weft reads
 * ids as indexes; the offset of the first other entry is kept in
 * *other (0: none) for weft_pallas_check().
 */
static int read_id_map(pallas_in *in, const char *what, uint64_t *other)
{
	uint64_t n, at = weft__pallas_in_offset(in);
	const uint8_t *b;
	int rc = weft__pallas_in_count(in, 4, &n, what);
	if (rc == 0)
		rc = weft__pallas_in_bytes(in, n * 4, &b, what);
	for (uint64_t i = 0; rc == 0 && *other == 0 && i < n; i++) {
		uint32_t v = weft__pallas_le32(b + 4 * i);
		if (v != i && v != WEFT_PALLAS_NO_REF)
			*other = at + 8 + 4 * i;
	}
	return rc;
}

/* Sequences: i32 type | u64 n | tokens, then three vector headers. */
static int parse_sequences(pallas_in *in, pallas_thread *t)
{
	int rc;
	for (uint64_t i = 0; i < t->sequence_count; i++) {
		pallas_sequence *s = &t->sequences[i];
		uint32_t type;
		s->offset = weft__pallas_in_offset(in);
		if ((rc = weft__pallas_in_u32(in, &type, "a sequence type")) < 0 ||
		    (rc = weft__pallas_in_count(in, 4, &s->token_count,
						"a sequence token count")) < 0 ||
		    (rc = weft__pallas_in_bytes(in, s->token_count * 4, &s->tokens,
						"sequence tokens")) < 0)
			return rc;
		s->type = (int32_t)type;
		if (s->token_count == 0)
			continue; /* a dead slot */
		if (s->type != WEFT_PALLAS_SEQUENCE_BLOCK &&
		    s->type != WEFT_PALLAS_SEQUENCE_LOOP)
			return weft__error(WEFT_EFORMAT, t->file, s->offset,
					   "sequence %llu: type %d, expected 0 (block) "
					   "or 1 (loop)", (unsigned long long)i, s->type);
		if ((rc = parse_vector(in, 1, 1, &s->durations,
				       "a sequence's duration vector")) < 0 ||
		    (rc = parse_vector(in, 1, 1, &s->exclusive,
				       "a sequence's exclusive duration vector")) < 0 ||
		    (rc = parse_vector(in, 0, 1, &s->timestamps,
				       "a sequence's timestamp vector")) < 0)
			return rc;
	}
	return 0;
}

static int parse_loops(pallas_in *in, pallas_thread *t)
{
	for (uint64_t i = 0; i < t->loop_count; i++) {
		pallas_loop *l = &t->loops[i];
		const uint8_t *b;
		int rc = weft__pallas_in_bytes(in, 16, &b, "a loop");
		if (rc < 0)
			return rc;
		l->repeated = weft__pallas_le32(b);
		l->iterations = weft__pallas_le32(b + 4);
		l->occurrences = weft__pallas_le64(b + 8);
	}
	return 0;
}

/* A token is usable when its type is valid and it names a live slot. */
static int check_token(const pallas_thread *t, uint32_t token, uint64_t at,
		       const char *where, uint64_t index)
{
	uint32_t type = WEFT_PALLAS_TOKEN_TYPE(token);
	uint32_t id = WEFT_PALLAS_TOKEN_IDX(token);
	int ok = 0;
	switch (type) {
	case WEFT_PALLAS_TOKEN_EVENT:
		ok = id < t->event_count;
		break;
	case WEFT_PALLAS_TOKEN_SEQUENCE:
		ok = id < t->sequence_count && t->sequences[id].token_count > 0;
		break;
	case WEFT_PALLAS_TOKEN_LOOP:
		ok = id < t->loop_count &&
		     WEFT_PALLAS_TOKEN_TYPE(t->loops[id].repeated) ==
			     WEFT_PALLAS_TOKEN_SEQUENCE;
		break;
	default:
		break;
	}
	if (ok)
		return 0;
	static const char types[] = "IESL";
	return weft__error(WEFT_EFORMAT, t->file, at,
			   "%s %llu: token %c%u is out of range or a dead slot "
			   "(%llu events, %llu sequences, %llu loops)", where,
			   (unsigned long long)index, types[type], id,
			   (unsigned long long)t->event_count,
			   (unsigned long long)t->sequence_count,
			   (unsigned long long)t->loop_count);
}

/* Checks every token of the live sequences and loops, and the root. */
static int check_grammar(const pallas_thread *t)
{
	for (uint64_t i = 0; i < t->sequence_count; i++) {
		const pallas_sequence *s = &t->sequences[i];
		for (uint64_t k = 0; k < s->token_count; k++) {
			int rc = check_token(t, weft__pallas_le32(s->tokens + 4 * k),
					     s->offset + 12 + 4 * k, "sequence", i);
			if (rc < 0)
				return rc;
		}
	}
	for (uint64_t i = 0; i < t->loop_count; i++) {
		const pallas_loop *l = &t->loops[i];
		if (l->repeated == WEFT_PALLAS_TOKEN_NONE)
			continue; /* a dead slot */
		int rc = check_token(t, l->repeated, 0, "loop", i);
		if (rc < 0 || WEFT_PALLAS_TOKEN_TYPE(l->repeated) != WEFT_PALLAS_TOKEN_SEQUENCE)
			return weft__error(WEFT_EFORMAT, t->file, WEFT_NO_OFFSET,
					   "loop %llu: repeats token 0x%08x, expected a "
					   "live sequence", (unsigned long long)i,
					   l->repeated);
	}
	/* A thread without events has a root of 0 tokens (Pallas 0.20's threadClose). */
	if (t->sequence_count > 0 &&
	    (t->root >= t->sequence_count ||
	     (t->sequences[t->root].token_count == 0 && t->event_count > 0)))
		return weft__error(WEFT_EFORMAT, t->file, 32,
				   "root sequence %u is out of range or a dead slot",
				   t->root);
	return 0;
}

/* The header: u32 thread | u32 archive | u64 counts x3 | u32 root | u64 ts. */
static int parse_header(pallas_in *in, pallas_thread *t)
{
	int rc;
	if ((rc = weft__pallas_in_u32(in, &t->thread_id, "the thread id")) < 0 ||
	    (rc = weft__pallas_in_u32(in, &t->archive_id, "the archive id")) < 0 ||
	    (rc = weft__pallas_in_count(in, WEFT_PALLAS_EVENT_HEADER + 24,
					&t->event_count, "the event count")) < 0 ||
	    (rc = weft__pallas_in_count(in, 12, &t->sequence_count,
					"the sequence count")) < 0 ||
	    (rc = weft__pallas_in_count(in, 16, &t->loop_count,
					"the loop count")) < 0 ||
	    (rc = weft__pallas_in_u32(in, &t->root, "the root sequence")) < 0 ||
	    (rc = weft__pallas_in_u64(in, &t->first_timestamp,
				      "the first timestamp")) < 0)
		return rc;
	return 0;
}

static int parse_thread(pallas_in *in, pallas_thread *t)
{
	int rc;
	if ((rc = parse_header(in, t)) < 0)
		return rc;
	t->events = calloc(t->event_count ? t->event_count : 1, sizeof *t->events);
	t->sequences = calloc(t->sequence_count ? t->sequence_count : 1,
			      sizeof *t->sequences);
	t->loops = calloc(t->loop_count ? t->loop_count : 1, sizeof *t->loops);
	if (!t->events || !t->sequences || !t->loops)
		return weft__error(WEFT_ENOMEM, t->file, WEFT_NO_OFFSET, "out of memory");
	if ((rc = parse_events(in, t)) < 0 ||
	    (rc = read_id_map(in, "the event id map", &t->other_map_entry)) < 0 ||
	    (rc = parse_sequences(in, t)) < 0 ||
	    (rc = read_id_map(in, "the sequence id map", &t->other_map_entry)) < 0 ||
	    (rc = parse_loops(in, t)) < 0 ||
	    (rc = read_id_map(in, "the loop id map", &t->other_map_entry)) < 0)
		return rc;
	if (weft__pallas_in_left(in) != 0)
		return weft__error(WEFT_EFORMAT, t->file, weft__pallas_in_offset(in),
				   "%llu bytes after the loop id map, expected the "
				   "end of the file",
				   (unsigned long long)weft__pallas_in_left(in));
	return check_grammar(t);
}

int weft__pallas_thread_load(const char *dir, const char *name,
			     pallas_thread **out)
{
	*out = NULL;
	pallas_thread *t = calloc(1, sizeof *t);
	char *path = weft__path_join(dir, WEFT_PALLAS_THREAD_FILE);
	char *file = malloc(strlen(name) + sizeof "/" WEFT_PALLAS_THREAD_FILE);
	if (t == NULL || path == NULL || file == NULL) {
		free(t);
		free(path);
		free(file);
		return weft__error(WEFT_ENOMEM, name, WEFT_NO_OFFSET, "out of memory");
	}
	sprintf(file, "%s/%s", name, WEFT_PALLAS_THREAD_FILE);
	t->file = file;
	t->dir = strdup(dir);
	int rc = t->dir ? weft__pallas_read_file(path, file, THREAD_FILE_MAX,
						  &t->buf, &t->size)
			: weft__error(WEFT_ENOMEM, name, WEFT_NO_OFFSET, "out of memory");
	free(path);
	if (rc == 0) {
		pallas_in in;
		weft__pallas_in_init(&in, t->buf, t->size, t->file);
		rc = parse_thread(&in, t);
	}
	if (rc < 0) {
		weft__pallas_thread_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

void weft__pallas_thread_free(pallas_thread *t)
{
	if (t == NULL)
		return;
	free(t->buf);
	free((char *)t->file);
	free(t->dir);
	free(t->events);
	free(t->sequences);
	free(t->loops);
	free(t);
}
