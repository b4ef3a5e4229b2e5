/* SPDX-License-Identifier: MIT */
/*
 * formats/otf2/otf2_stream.c - a stream of an OTF2 trace: the events of one
 * location, read by libotf2's local event reader in batches of BATCH
 * records (each record packed by the callbacks of otf2_records.c), then
 * handed out one by one or in runs. Each stream opens its own libotf2
 * reader, selected on its location: cursors of different streams never
 * share libotf2 state, and the memory of a stream is one libotf2 chunk
 * (the chunk size the trace was written with) plus one batch.
 *
 * A location's events are in time order in OTF2; both orders of weft
 * (time, stored) are the file's. The local definitions of the location
 * are read first when the archive has them: libotf2 applies their
 * mapping tables and clock offsets to the events itself.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/otf2/otf2_internal.h"

/* Records read from libotf2 at a time. */
#define BATCH 4096

typedef struct otf2_stream {
	weft_trace *trace;
	const char *file;          /* the stream's event file, for messages */
	OTF2_Reader *reader;
	OTF2_EvtReader *evt;
	OTF2_EvtReaderCallbacks *callbacks;
	otf2_batch batch;
	size_t next;               /* next event of the batch to hand out */
	int done;
} otf2_stream;

static void stream_free(otf2_stream *s)
{
	if (s == NULL)
		return;
	if (s->reader != NULL) {
		if (s->evt != NULL)
			OTF2_Reader_CloseEvtReader(s->reader, s->evt);
		OTF2_Reader_Close(s->reader);
	}
	if (s->callbacks != NULL)
		OTF2_EvtReaderCallbacks_Delete(s->callbacks);
	free(s->batch.events);
	free(s->batch.slots);
	free(s->batch.attrs);
	free(s->batch.slot_at);
	free(s->batch.attr_at);
	free(s);
}

/* Reads the local definitions of `location` when its file exists. */
static int read_local_definitions(otf2_stream *s, const otf2_trace *ot, uint64_t location)
{
	char name[32];
	snprintf(name, sizeof name, "%llu.def", (unsigned long long)location);
	char *path = weft__path_join(ot->archive_dir, name);
	struct stat st;
	int exists = path != NULL && stat(path, &st) == 0;
	free(path);
	if (!exists)
		return 0;
	OTF2_ErrorCode e = OTF2_Reader_OpenDefFiles(s->reader);
	OTF2_DefReader *dr = e == OTF2_SUCCESS ? OTF2_Reader_GetDefReader(s->reader, location)
					       : NULL;
	uint64_t read = 0;
	if (dr != NULL) {
		e = OTF2_Reader_ReadAllLocalDefinitions(s->reader, dr, &read);
		OTF2_Reader_CloseDefReader(s->reader, dr);
	} else if (e == OTF2_SUCCESS) {
		e = OTF2_ERROR_INVALID;
	}
	OTF2_Reader_CloseDefFiles(s->reader);
	if (e != OTF2_SUCCESS)
		return weft__otf2_error(WEFT_EFORMAT, s->file,
					"the location's local definitions cannot be read", e);
	return 0;
}

int weft__otf2_stream_open(weft_trace *trace, uint32_t stream, int stored, void **state)
{
	(void)stored;
	const otf2_trace *ot = trace->backend_data;
	*state = NULL;
	if (stream >= ot->stream_count)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "no stream %u", stream);
	otf2_stream *s = calloc(1, sizeof *s);
	if (s == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	s->trace = trace;
	s->file = weft_trace_stream(trace, stream)->file;
	s->batch.ot = ot;
	s->batch.stream = stream;
	uint64_t location = ot->streams[stream].location;
	weft__otf2_quiet();
	s->reader = OTF2_Reader_Open(ot->anchor);
	int rc = 0;
	if (s->reader == NULL)
		rc = weft__otf2_error(WEFT_EFORMAT, ot->anchor, "the archive cannot be opened again",
				      OTF2_SUCCESS);
	OTF2_ErrorCode e = OTF2_SUCCESS;
	if (rc == 0) {
		e = OTF2_Reader_SetSerialCollectiveCallbacks(s->reader);
		if (e == OTF2_SUCCESS)
			e = OTF2_Reader_SelectLocation(s->reader, location);
		if (e != OTF2_SUCCESS)
			rc = weft__otf2_error(WEFT_EFORMAT, s->file, "the location cannot be selected", e);
	}
	if (rc == 0)
		rc = read_local_definitions(s, ot, location);
	if (rc == 0) {
		e = OTF2_Reader_OpenEvtFiles(s->reader);
		s->evt = e == OTF2_SUCCESS ? OTF2_Reader_GetEvtReader(s->reader, location) : NULL;
		s->callbacks = weft__otf2_event_callbacks();
		if (s->evt == NULL)
			rc = weft__otf2_error(WEFT_EFORMAT, s->file,
					      "the location's events cannot be read", e);
		else if (s->callbacks == NULL)
			rc = weft__error(WEFT_ENOMEM, s->file, WEFT_NO_OFFSET, "out of memory");
	}
	if (rc == 0) {
		e = OTF2_Reader_RegisterEvtCallbacks(s->reader, s->evt, s->callbacks, &s->batch);
		if (e != OTF2_SUCCESS)
			rc = weft__otf2_error(WEFT_EFORMAT, s->file,
					      "the event callbacks cannot be registered", e);
	}
	if (rc < 0) {
		stream_free(s);
		return rc;
	}
	*state = s;
	return 0;
}

/* The next batch of records: 1 when there are events, 0 at the end, or < 0. */
static int refill(otf2_stream *s)
{
	otf2_batch *b = &s->batch;
	b->count = b->slot_count = b->attr_size = 0;
	s->next = 0;
	if (s->done)
		return 0;
	uint64_t read = 0;
	weft__otf2_quiet();
	OTF2_ErrorCode e = OTF2_Reader_ReadLocalEvents(s->reader, s->evt, BATCH, &read);
	if (b->failed)
		return weft__error(WEFT_ENOMEM, s->file, WEFT_NO_OFFSET,
				   "out of memory while reading the events");
	if (e != OTF2_SUCCESS) {
		s->done = 1;
		return weft__otf2_error(WEFT_EFORMAT, s->file, "the events cannot be read", e);
	}
	if (read < BATCH)
		s->done = 1;
	weft__otf2_batch_fix(b);
	return b->count > 0;
}

int weft__otf2_stream_next(void *state, weft_event *event)
{
	otf2_stream *s = state;
	if (s->next == s->batch.count) {
		int rc = refill(s);
		if (rc <= 0)
			return rc;
	}
	*event = s->batch.events[s->next++];
	return 1;
}

int weft__otf2_stream_next_batch(void *state, weft_event *events, size_t cap)
{
	otf2_stream *s = state;
	if (s->next == s->batch.count) {
		int rc = refill(s);
		if (rc <= 0)
			return rc;
	}
	size_t n = s->batch.count - s->next;
	if (n > cap)
		n = cap;
	memcpy(events, s->batch.events + s->next, n * sizeof *events);
	s->next += n;
	return (int)n;
}

void weft__otf2_stream_close(void *state)
{
	stream_free(state);
}
