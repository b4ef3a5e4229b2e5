/* SPDX-License-Identifier: MIT */
/*
 * core/schema.c - the event kinds of a trace (weft/schema.h), from its
 * backend's event_schemas hook; none when the format lists none.
 */
#include <string.h>

#include "core/internal.h"

/* The backend's kinds: *out and their count (0 without the hook). */
static size_t schemas_of(const weft_trace *trace, const weft_event_schema **out)
{
	*out = NULL;
	if (trace == NULL || trace->backend->event_schemas == NULL)
		return 0;
	return trace->backend->event_schemas(trace, out);
}

size_t weft_trace_event_schema_count(const weft_trace *trace)
{
	const weft_event_schema *all;
	return schemas_of(trace, &all);
}

const weft_event_schema *weft_trace_event_schema(const weft_trace *trace, size_t i)
{
	const weft_event_schema *all;
	return i < schemas_of(trace, &all) ? &all[i] : NULL;
}

const weft_event_schema *weft_trace_event_schema_find(const weft_trace *trace,
						      const char *code, size_t code_len,
						      uint32_t payload_size)
{
	const weft_event_schema *all;
	size_t n = schemas_of(trace, &all);

	for (size_t i = 0; i < n; i++)
		if (strlen(all[i].code) == code_len && memcmp(all[i].code, code, code_len) == 0 &&
		    (payload_size == 0 || all[i].payload_size == 0 ||
		     all[i].payload_size == payload_size))
			return &all[i];
	return NULL;
}
