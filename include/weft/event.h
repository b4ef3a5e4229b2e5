/* SPDX-License-Identifier: MIT */
/*
 * weft/event.h - the unified event model and the cursors that deliver
 * events of one stream, or of many streams merged by time.
 *
 * One event model serves every format:
 *   - ovni:   a point event; code = MCV ("OHx"); payload = the 0..16 payload
 *             bytes (for jumbo events: the 4-byte size); data = the jumbo
 *             data after it. time = clock + the stream's clock_offset.
 *   - Heph:   an interval [time, end]; code = description; fields =
 *             attributes; depth/parent = call tree.
 *   - ROSS:   a sample record; code = "PE", "KP", "LP", "MODEL",
 *             "ANALYSIS_MODEL", "EVENT"; payload = the fixed part as
 *             stored, data = the model data; time = real time in ns.
 *   - Pallas: an event occurrence; code = record kind ("Enter", ...).
 * Payload bytes are delivered as stored (no copy when possible); typed
 * values come from weft_event_fields(), which knows each format's layouts.
 */
#ifndef WEFT_EVENT_H
#define WEFT_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "weft/trace.h"
#include "weft/api.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

enum weft_event_flags {
	WEFT_EVENT_JUMBO = 1u << 0,      /* ovni jumbo event: data holds its bytes */
	WEFT_EVENT_BIG_ENDIAN = 1u << 1, /* payload/data bytes are big-endian */
	WEFT_EVENT_INTERVAL = 1u << 2,   /* [time, end] is an interval */
	WEFT_EVENT_REORDERED = 1u << 3,  /* moved by unordered-region sorting */
	/* The format records no time for this event (ROSS analysis model
	 * samples): its time is 0, not a moment of the run, and real-time
	 * views and spans leave it out. */
	WEFT_EVENT_NO_TIME = 1u << 4
};

typedef struct weft_event {
	uint64_t time;          /* ns, clock offset applied */
	uint64_t end;           /* ns; equals time for point events */
	uint64_t offset;        /* byte offset of the record in its stream file */
	uint64_t seq;           /* index of the event in its stream (stored order) */
	uint32_t stream;        /* stream index */
	uint32_t flags;         /* enum weft_event_flags */
	const char *code;       /* event kind, NOT NUL-terminated */
	uint32_t code_len;
	uint32_t payload_size;
	const uint8_t *payload; /* fixed payload bytes, as stored */
	const uint8_t *data;    /* variable data (ovni jumbo), as stored */
	uint64_t data_size;
	int32_t depth;          /* nesting depth in a call tree, -1 if none */
	int64_t parent;         /* seq of the enclosing event, -1 if none */
} weft_event;

/* ---- Typed fields -------------------------------------------------------- */

typedef enum weft_type {
	WEFT_TYPE_U8 = 1, WEFT_TYPE_U16, WEFT_TYPE_U32, WEFT_TYPE_U64,
	WEFT_TYPE_I8, WEFT_TYPE_I16, WEFT_TYPE_I32, WEFT_TYPE_I64,
	WEFT_TYPE_F32, WEFT_TYPE_F64,
	WEFT_TYPE_STR,   /* text (not NUL-terminated: use v.s.len) */
	WEFT_TYPE_BYTES, /* opaque bytes (v.s) */
	WEFT_TYPE_BOOL
} weft_type;

/* "u32", "str", ... */
const char *weft_type_name(weft_type type);

typedef struct weft_field {
	const char *name;   /* NOT NUL-terminated: name_len */
	uint32_t name_len;
	weft_type type;     /* element type for arrays */
	uint32_t count;     /* number of elements when is_array */
	int is_array;
	union {
		uint64_t u;     /* U8..U64, BOOL */
		int64_t i;      /* I8..I64 */
		double f;       /* F32, F64 */
		struct { const char *ptr; size_t len; } s; /* STR, BYTES */
	} v;                /* scalar value (when !is_array) */
	const uint8_t *raw; /* arrays: the stored elements (format's layout) */
	size_t raw_size;
	int big_endian;     /* byte order of raw */
} weft_field;

/*
 * Decodes the typed fields of `event` into out[0..cap-1]. Returns the
 * number of fields the event has (which may exceed cap: call again with a
 * larger array), 0 when the format knows no layout for this event (print
 * the payload as bytes), or a negative WEFT_E* code when the payload does
 * not match its layout.
 */
int weft_event_fields(const weft_trace *trace, const weft_event *event,
		      weft_field *out, size_t cap);

/* Element i of an array field (as a scalar field named like the array). */
int weft_field_element(const weft_field *array, uint32_t i, weft_field *out);

/* ---- What an event means to a viewer ------------------------------------- */

/*
 * The role of an event on a timeline, decided by its format's backend so
 * that viewers and converters never look at formats:
 *   - POINT: an instant (ovni point events, ROSS event records, Pallas
 *     records other than Enter/Leave);
 *   - INTERVAL: a complete span [time, end] (Heph events);
 *   - ENTER / LEAVE: opens / closes a span; an ENTER is closed by the next
 *     LEAVE with the same channel and pair key on the same stream
 *     (ovni enter/leave pairs of the signature table, thread running
 *     state, stack marks; Pallas Enter/Leave);
 *   - COUNTER: sets the value of the counter named `name` (ovni single
 *     marks), in `value`;
 *   - SAMPLE: each numeric field is the value of a counter named after
 *     the field (ROSS PE, KP, LP and model samples).
 */
typedef enum weft_event_role {
	WEFT_ROLE_POINT = 0,
	WEFT_ROLE_INTERVAL,
	WEFT_ROLE_ENTER,
	WEFT_ROLE_LEAVE,
	WEFT_ROLE_COUNTER,
	WEFT_ROLE_SAMPLE
} weft_event_role;

/* "point", "interval", "enter", "leave", "counter", "sample". */
const char *weft_event_role_name(weft_event_role role);

typedef struct weft_event_class {
	weft_event_role role;
	/*
	 * The timeline of the stream the event belongs on: NULL for the
	 * stream's own (one call tree: Heph, Pallas), else a name such as
	 * "nosv VT" (ovni: model and category, whose enters and leaves nest
	 * within one channel but not across channels), "running", a mark's
	 * title. NUL-terminated, valid as long as the trace.
	 */
	const char *channel;
	/* ENTER/LEAVE: equal for the events that close each other. */
	uint64_t pair_key;
	/* Display name (NUL-terminated, valid as long as the trace), or NULL
	 * for the event's code. ENTER: the span's name; LEAVE: ignored. */
	const char *name;
	uint32_t name_len;      /* strlen(name), or 0: not given */
	/* The group the name belongs to: ovni model ("nosv"), "mpi" for
	 * Pallas MPI records, ...; NULL for none. NUL-terminated. */
	const char *category;
	/* COUNTER: the value. */
	double value;
	/* SAMPLE: the fields that identify the sample rather than measure
	 * (ids, times): not counters. NULL-terminated list, or NULL. */
	const char *const *sample_skip;
	/* Formats with a virtual time (ROSS): the numeric field that holds
	 * the event's virtual time, or NULL. */
	const char *virtual_time_field;
	/* Message ends (POINT events: MPI sends and receives): the n-th
	 * WEFT_FLOW_OUT and the n-th WEFT_FLOW_IN of one flow key are the two
	 * ends of one message (MPI's non-overtaking order). */
	int flow;               /* enum weft_flow_end */
	uint64_t flow_key;      /* sender, receiver, tag, communicator */
	/* A message whose sending end is no event of the trace (ROSS
	 * event-trace records, filed at the receiving LP): the stream it was
	 * sent from (-1: unknown) and the field of its virtual send time.
	 * Viewers draw it on the virtual time axis only. */
	int64_t flow_from_stream;
	const char *flow_from_virtual_field;
} weft_event_class;

enum weft_flow_end { WEFT_FLOW_NONE = 0, WEFT_FLOW_OUT = 1, WEFT_FLOW_IN = 2 };

/*
 * What `event` is on a timeline (see weft_event_role). Never fails: an
 * event its format knows nothing about is a POINT named by its code.
 * May decode the event's fields (as weft_event_fields() does).
 */
void weft_event_classify(const weft_trace *trace, const weft_event *event,
			 weft_event_class *out);

/* ---- Cursors -------------------------------------------------------------- */

typedef struct weft_cursor weft_cursor;

/*
 * The order a cursor delivers events in (weft_filter.order,
 * weft_cursor_order()).
 *   - TIME: by time; a merged cursor merges its streams by time (ties
 *     by stream index). ovni streams are sorted where their files are
 *     not; Heph call trees come parents first (time-order index).
 *   - STORED: as the files hold them: ovni unsorted, Heph in file order
 *     (the merged cursor reads the one file in a single pass, no
 *     time-order index; a child comes before its parent, depth -1).
 *   - NATURAL: the order the format is best read in, which its backend
 *     declares (weft_trace_natural_order()): STORED for Heph (one pass,
 *     bounded memory), TIME for the others.
 *   - DEFAULT (0): what the trace was opened with: STORED when
 *     weft_open_options.stored_order is set, else TIME.
 * Formats whose natural order is their files' (ROSS, see
 * weft_trace_file_order_default()) read whole files merged by time in
 * every order; their cursors say TIME.
 */
typedef enum weft_order {
	WEFT_ORDER_DEFAULT = 0,
	WEFT_ORDER_TIME = 1,
	WEFT_ORDER_STORED = 2,
	WEFT_ORDER_NATURAL = 3
} weft_order;

/* What a cursor delivers. Zero-initialise, then set what you need. */
typedef struct weft_filter {
	uint64_t from;              /* earliest time (ns), inclusive */
	uint64_t to;                /* latest time (ns), inclusive; 0 = no bound */
	const char *stream_pattern; /* fnmatch() glob on the stream path, or NULL */
	const char *code_pattern;   /* fnmatch() glob on the event code, or NULL */
	int order;                  /* weft_order; 0: as the trace was opened */
} weft_filter;

/*
 * The natural order of the trace's format (TIME or STORED): what
 * WEFT_ORDER_NATURAL gives, known without reading any event.
 */
weft_order weft_trace_natural_order(const weft_trace *trace);

/*
 * A cursor over every stream selected by `filter` (NULL = all), merged by
 * time (ties broken by stream index, then stored order), or in file order
 * when the order is STORED and the format keeps its streams in one file.
 */
int weft_cursor_create(weft_trace *trace, const weft_filter *filter,
		       weft_cursor **out);
/* A cursor over one stream, in stream order, unfiltered (as the trace was opened). */
int weft_cursor_create_stream(weft_trace *trace, uint32_t stream,
			      weft_cursor **out);
/*
 * A cursor over one stream with the filter of a merged cursor: the time
 * window, the code pattern and the order (`filter` NULL: none, as
 * weft_cursor_create_stream()). The stream pattern is not looked at: the
 * stream is named. WEFT_EINVAL for a stream past the end or an order
 * that is none of weft_order.
 */
int weft_cursor_create_stream_filtered(weft_trace *trace, uint32_t stream,
				       const weft_filter *filter, weft_cursor **out);
/*
 * The order the cursor delivers its events in: WEFT_ORDER_TIME or
 * WEFT_ORDER_STORED (never DEFAULT or NATURAL: those are resolved when the
 * cursor is created). A caller that needs time order (a viewer that
 * stops at the end of a window) asks the cursor rather than the format.
 */
weft_order weft_cursor_order(const weft_cursor *cursor);
/*
 * Next event: returns 1 and sets *event (valid until the next call on this
 * cursor), 0 at the end, or a negative WEFT_E* code. A stream that cannot
 * be read further records a diagnostic on the trace and ends; the other
 * streams go on.
 */
int weft_cursor_next(weft_cursor *cursor, const weft_event **event);
void weft_cursor_free(weft_cursor *cursor);

/*
 * The time of the trace's earliest event (ns, clock offsets applied), to
 * which times relative to the start of the trace ("+10ms" in the weft
 * command) are added: 1 and *start, 0 when the trace has no event with a
 * time (*start = 0), or a negative WEFT_E* code. It opens the trace again
 * and reads the first events of a time-ordered cursor (the first block of
 * every stream; a Heph trace is scanned and builds its time-order index),
 * once: later calls return the kept value. What that read meets is not
 * recorded on `trace` (its own reads report it). Events the format records
 * no time for (WEFT_EVENT_NO_TIME) are skipped.
 */
int weft_trace_start_time(weft_trace *trace, uint64_t *start);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_EVENT_H */
