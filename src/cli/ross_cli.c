/* SPDX-License-Identifier: MIT */
/*
 * cli/ross_cli.c - helpers of the ROSS analysis commands (see
 * ross_cli.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/ross_cli.h"

double cli_ross_clock_rate(const weft_open_options *options)
{
	const char *v = weft_open_options_get(options, "ross.clock_rate");
	return v != NULL ? strtod(v, NULL) : 0; /* checked when it was set */
}

/* The analysis commands read ROSS samples; the library says which traces have them. */
int cli_ross_require(const weft_trace *trace, const char *command)
{
	if (weft_ross_analysable(trace) == 0)
		return CLI_EXIT_OK;
	fprintf(stderr, "weft %s: %s; this command reads ROSS runs\n", command,
		weft_last_error());
	return CLI_EXIT_FAILURE;
}

/* Walks up the parents (a ROSS hierarchy is at most five levels deep). */
const weft_node *cli_ross_root(const weft_trace *trace, uint32_t id)
{
	const weft_node *node = weft_trace_node(trace, id);
	while (node->parent != WEFT_NO_PARENT)
		node = weft_trace_node(trace, node->parent);
	return node;
}

/* The "kind" member of the file node's metadata. */
void cli_ross_file_kind(const weft_node *root, char *buf, size_t size)
{
	json_t *meta = json_loads(root->metadata_json, 0, NULL);
	json_t *kind = json_object_get(meta, "kind");
	snprintf(buf, size, "%s", json_is_string(kind) ? json_string_value(kind) : "");
	json_decref(meta);
}

/* Field names are not NUL-terminated: compare with their length. */
int cli_field_is(const weft_field *field, const char *name)
{
	return field->name_len == strlen(name) &&
	       memcmp(field->name, name, field->name_len) == 0;
}

/* Integers and floats as a double; bytes, text and arrays give NaN. */
double cli_field_number(const weft_field *field)
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

/* "64M", "1G", "65536": digits and an optional binary unit (and B). */
int cli_parse_size(const char *text, uint64_t *bytes)
{
	char *end;
	if (text[0] < '0' || text[0] > '9')
		return -1;
	unsigned long long v = strtoull(text, &end, 10);
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift != 0)
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end != '\0' || v > (UINT64_MAX >> shift))
		return -1;
	*bytes = (uint64_t)v << shift;
	return 0;
}
