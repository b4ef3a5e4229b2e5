/* SPDX-License-Identifier: MIT */
/*
 * weft/schema.h - the event kinds a trace can contain and their fields,
 * known when the trace is opened, before any event is read (as
 * babeltrace2's event classes): what a columnar output needs to write
 * its header, or a front end to list what it may filter on.
 *
 * Each format knows its kinds: ovni the signature table of the 1.14
 * models (plus what any unknown MCV may be: no schema, fields read per
 * event); ROSS its record layouts, with the model data decoded by the
 * ross.model_schema option; Pallas its record kinds; Heph one kind per
 * event description, found by the open scan, with the attributes of its
 * first event as variable fields. The fields of an event
 * (weft_event_fields()) follow its kind's schema: same names, types and
 * order; a field marked `variable` may be absent from some events.
 */
#ifndef WEFT_SCHEMA_H
#define WEFT_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "weft/api.h"
#include "weft/event.h"
#include "weft/trace.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

/* A field of an event kind. */
typedef struct weft_field_schema {
	const char *name;    /* NUL-terminated */
	weft_type type;      /* the element type of an array */
	int is_array;        /* an array, as many elements as the event holds */
	/* 1: its size or its presence varies from event to event (a text, a
	 * bytes field of any length, a field only some events have); 0: a
	 * fixed-size scalar every event of the kind has. */
	int variable;
	/* 1: decoded from the event's variable data (ROSS model data, ovni
	 * jumbo data) rather than its fixed payload. */
	int in_data;
} weft_field_schema;

/* An event kind: the events of one code (and payload layout). */
typedef struct weft_event_schema {
	const char *code;          /* the events' code (NUL-terminated) */
	/* The fixed payload size of its events when their code has several
	 * layouts told apart by it (ROSS LP records: 72 or 60 bytes); 0 when
	 * it does not tell layouts apart. */
	uint32_t payload_size;
	/* What its events are on a timeline (weft_event_classify() decides
	 * per event: ovni thread states, for one, differ by value). */
	weft_event_role role;
	const char *category;      /* ovni model ("nosv"), "ross", ...; or NULL */
	/* Bytes of variable data the fields decode (ROSS: the model schema's
	 * size; data beyond them is the `rest` field), 0 when none. */
	uint32_t data_size;
	size_t field_count;
	const weft_field_schema *fields;
	/* 1: its events may have fields past the listed ones, known per event
	 * only (Pallas and Heph attributes); 0: the list is complete. */
	int variable_fields;
} weft_event_schema;

/*
 * The event kinds of the trace's format and options: count, and kind i
 * (NULL past the end), valid as long as the trace. A trace may hold
 * events of no listed kind (an ovni MCV outside the signature table):
 * their fields are read per event.
 */
size_t weft_trace_event_schema_count(const weft_trace *trace);
const weft_event_schema *weft_trace_event_schema(const weft_trace *trace, size_t i);

/*
 * The kind of events with code `code` (`code_len` bytes) and fixed
 * payload `payload_size` (0: any), or NULL when none is listed.
 */
const weft_event_schema *weft_trace_event_schema_find(const weft_trace *trace,
						      const char *code, size_t code_len,
						      uint32_t payload_size);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_SCHEMA_H */
