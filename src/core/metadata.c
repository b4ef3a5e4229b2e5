/* SPDX-License-Identifier: MIT */
/*
 * core/metadata.c - metadata handed over as JSON objects: the backends
 * build jansson objects, the trace keeps them as compact text.
 */
#include <jansson.h>
#include <stdlib.h>

#include "core/internal.h"

/*
 * A JSON string of `len` bytes of text, repaired (weft__utf8_repaired())
 * where it is not valid UTF-8: jansson refuses invalid UTF-8, and a
 * damaged name must not make a trace unreadable (it once failed the
 * open with "out of memory"). NULL on ENOMEM.
 */
json_t *weft__json_text(const char *s, size_t len)
{
	if (weft__utf8_valid_prefix((const unsigned char *)s, len) == len)
		return json_stringn(s, len);
	char *text = weft__utf8_repaired(s, len);
	json_t *j = text ? json_string(text) : NULL;
	free(text);
	return j;
}

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
