/* SPDX-License-Identifier: MIT */
/*
 * analysis/ross_common.c - what the ROSS analyses (weft/ross.h) share:
 * which traces they read, the file and kind of a stream, the clock rate,
 * fields by name (analysis/ross_analysis.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "analysis/ross_analysis.h"

/* The analyses read ROSS samples; other formats have none. */
int weft_ross_analysable(const weft_trace *trace)
{
	weft_format format = weft_trace_format(trace);
	const char *name = weft_format_name(format);

	if (format == WEFT_FORMAT_ROSS)
		return 0;
	/* "an ovni trace", "a heph trace": the article by the name's sound */
	return weft__error(WEFT_EUNSUPPORTED, NULL, WEFT_NO_OFFSET, "'%s' is a%s %s trace",
			   weft_trace_path(trace), strchr("aeiou", name[0]) ? "n" : "", name);
}

/* Walks up the parents (a ROSS hierarchy is at most five levels deep). */
const weft_node *weft__ross_root(const weft_trace *trace, uint32_t id)
{
	const weft_node *node = weft_trace_node(trace, id);
	while (node->parent != WEFT_NO_PARENT)
		node = weft_trace_node(trace, node->parent);
	return node;
}

/* The "kind" member of the file node's metadata. */
void weft__ross_file_kind(const weft_node *root, char *buf, size_t size)
{
	json_t *meta = json_loads(root->metadata_json, 0, NULL);
	json_t *kind = json_object_get(meta, "kind");
	snprintf(buf, size, "%s", json_is_string(kind) ? json_string_value(kind) : "");
	json_decref(meta);
}

/*
 * The ROSS backend records the option in the trace metadata
 * ("clock_rate": a number, or null), written with every digit a double
 * needs, so the value read back is the one given.
 */
double weft__ross_clock_rate(const weft_trace *trace)
{
	json_t *meta = json_loads(weft_trace_metadata_json(trace), 0, NULL);
	json_t *rate = json_object_get(meta, "clock_rate");
	double hz = json_is_number(rate) ? json_number_value(rate) : 0;
	json_decref(meta);
	return hz;
}

/* Field names are not NUL-terminated: compare with their length. */
int weft__field_is(const weft_field *field, const char *name)
{
	return field->name_len == strlen(name) &&
	       memcmp(field->name, name, field->name_len) == 0;
}

/* Integers and floats as a double; bytes, text and arrays give NaN. */
double weft__field_number(const weft_field *field)
{
	if (field->is_array)
		return NAN;
	switch (field->type) {
	case WEFT_TYPE_U8: case WEFT_TYPE_U16: case WEFT_TYPE_U32: case WEFT_TYPE_U64:
	case WEFT_TYPE_BOOL:
		return (double)field->v.u;
	case WEFT_TYPE_I8: case WEFT_TYPE_I16: case WEFT_TYPE_I32: case WEFT_TYPE_I64:
		return (double)field->v.i;
	case WEFT_TYPE_F32: case WEFT_TYPE_F64:
		return field->v.f;
	default:
		return NAN;
	}
}
