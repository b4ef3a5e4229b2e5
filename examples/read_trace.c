/* SPDX-License-Identifier: MIT */
/*
 * read_trace.c - reads a trace of any format (ovni, Heph, ROSS, Pallas)
 * with the public API only (weft/weft.h): the format, the hierarchy of
 * nodes, the event kinds the trace declares, then the first events of
 * every stream merged by time, each with its typed fields.
 *
 *   read_trace TRACE [EVENTS]
 *
 * EVENTS: how many events to print (default 20). The program shows the
 * calls a reader needs: weft_trace_open (the format is detected),
 * weft_trace_node / weft_trace_stream, weft_trace_event_schema,
 * weft_cursor_create / weft_cursor_next, weft_event_fields, and the
 * trace's diagnostics at the end.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft/weft.h"

/* Prints the library's last error and exits. */
static void die(const char *what)
{
	fprintf(stderr, "read_trace: %s: %s\n", what, weft_last_error());
	exit(1);
}

/* One typed field as name=value (arrays by their element count). */
static void print_field(const weft_field *f)
{
	printf(" %.*s=", (int)f->name_len, f->name);
	if (f->is_array) {
		printf("[%u %s]", f->count, weft_type_name(f->type));
		return;
	}
	switch (f->type) {
	case WEFT_TYPE_I8: case WEFT_TYPE_I16: case WEFT_TYPE_I32: case WEFT_TYPE_I64:
		printf("%" PRId64, f->v.i);
		break;
	case WEFT_TYPE_F32: case WEFT_TYPE_F64:
		printf("%g", f->v.f);
		break;
	case WEFT_TYPE_STR:
		printf("\"%.*s\"", (int)f->v.s.len, f->v.s.ptr);
		break;
	case WEFT_TYPE_BYTES:
		printf("<%zu bytes>", f->v.s.len);
		break;
	default:
		printf("%" PRIu64, f->v.u);
		break;
	}
}

/* The nodes, indented by their depth in the hierarchy. */
static void print_hierarchy(const weft_trace *trace)
{
	for (size_t i = 0; i < weft_trace_node_count(trace); i++) {
		const weft_node *n = weft_trace_node(trace, i);
		int depth = 0;
		for (uint32_t p = n->parent; p != WEFT_NO_PARENT; p = weft_trace_node(trace, p)->parent)
			depth++;
		printf("  %*s%s [%s]\n", 2 * depth, "", n->name, n->kind);
	}
}

/* The first `max` events merged by time, with their fields. */
static void print_events(weft_trace *trace, uint64_t max)
{
	weft_cursor *cursor;
	const weft_event *ev;
	weft_field fields[32];
	uint64_t n = 0;
	int rc;

	if (weft_cursor_create(trace, NULL, &cursor) < 0)
		die("cannot read the events");
	while (n < max && (rc = weft_cursor_next(cursor, &ev)) == 1) {
		printf("  %" PRIu64 "  %.*s  %s", ev->time, (int)ev->code_len, ev->code,
		       weft_trace_stream(trace, ev->stream)->path);
		int count = weft_event_fields(trace, ev, fields, 32);
		for (int i = 0; i < count && i < 32; i++)
			print_field(&fields[i]);
		putchar('\n');
		n++;
	}
	weft_cursor_free(cursor);
}

int main(int argc, char **argv)
{
	weft_trace *trace;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: read_trace TRACE [EVENTS]\n");
		return 2;
	}
	uint64_t max = argc == 3 ? strtoull(argv[2], NULL, 10) : 20;
	if (weft_trace_open(argv[1], NULL, &trace) < 0)
		die("cannot open the trace");
	printf("%s: format %s, %zu streams\n", argv[1],
	       weft_format_name(weft_trace_format(trace)), weft_trace_stream_count(trace));
	printf("hierarchy:\n");
	print_hierarchy(trace);
	printf("event kinds: %zu\n", weft_trace_event_schema_count(trace));
	for (size_t i = 0; i < weft_trace_event_schema_count(trace) && i < 5; i++) {
		const weft_event_schema *k = weft_trace_event_schema(trace, i);
		printf("  %s (%s):", k->code, weft_event_role_name(k->role));
		for (size_t f = 0; f < k->field_count; f++)
			printf(" %s", k->fields[f].name);
		printf("\n");
	}
	printf("first events:\n");
	print_events(trace, max);
	for (size_t i = 0; i < weft_trace_diag_count(trace); i++)
		fprintf(stderr, "%s: %s\n", weft_severity_name(weft_trace_diag(trace, i)->severity),
			weft_trace_diag(trace, i)->message);
	weft_trace_free(trace);
	return 0;
}
