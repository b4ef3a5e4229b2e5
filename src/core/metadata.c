/* SPDX-License-Identifier: MIT */
/*
 * core/metadata.c - metadata handed over as JSON objects: the backends
 * build jansson objects, the trace keeps them as compact text.
 */
#include <jansson.h>
#include <stdlib.h>

#include "core/internal.h"

/* Compact text of `obj` (key order kept), or NULL with the error set. */
static char *dump_object(json_t *obj)
{
	char *text = obj != NULL ? json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	if (text == NULL)
		weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	return text;
}

int weft__trace_set_node_metadata_object(weft_trace *trace, uint32_t node,
					 struct json_t *obj)
{
	char *text = dump_object(obj);
	json_decref(obj);
	if (text == NULL)
		return WEFT_ENOMEM;
	int rc = weft__trace_set_node_metadata(trace, node, text);
	free(text);
	return rc;
}

int weft__trace_set_metadata_object(weft_trace *trace, struct json_t *obj)
{
	char *text = dump_object(obj);
	json_decref(obj);
	if (text == NULL)
		return WEFT_ENOMEM;
	int rc = weft__trace_set_metadata(trace, text);
	free(text);
	return rc;
}
