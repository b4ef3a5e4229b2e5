/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_records.c - what the record kinds are called and
 * how their payloads decode into named fields, with definition names
 * resolved (the region of an Enter, the name of a generic event), plus
 * the attributes of the occurrence.
 */
#include <pthread.h>
#include <string.h>

#include "formats/pallas/pallas_internal.h"
#include "weft/pallas.h"
#include "weft/pallas_grammar.h"

static const char *const record_names[WEFT_PALLAS_REC_COUNT] = {
	"Invalid", "MeasurementOnOff", "Enter", "Leave", "MPI_Send",
	"MPI_Isend", "MPI_IsendComplete", "MPI_IrecvRequest", "MPI_Recv",
	"MPI_Irecv", "MPI_RequestTest", "MPI_RequestCancelled",
	"MPI_CollectiveBegin", "MPI_CollectiveEnd", "OMP_Fork", "OMP_Join",
	"OMP_AcquireLock", "OMP_ReleaseLock", "OMP_TaskCreate",
	"OMP_TaskSwitch", "OMP_TaskComplete", "Metric", "ParameterString",
	"ParameterInt", "ParameterUnsignedInt", "ThreadFork", "ThreadJoin",
	"ThreadTeamBegin", "ThreadTeamEnd", "ThreadAcquireLock",
	"ThreadReleaseLock", "ThreadTaskCreate", "ThreadTaskSwitch",
	"ThreadTaskComplete", "ThreadCreate", "ThreadBegin", "ThreadWait",
	"ThreadEnd", "IoCreateHandle", "IoDestroyHandle", "IoDuplicateHandle",
	"IoSeek", "IoChangeStatusFlags", "IoDeleteFile", "IoOperationBegin",
	"IoOperationTest", "IoOperationIssued", "IoOperationComplete",
	"IoOperationCancelled", "IoAcquireLock", "IoReleaseLock", "IoTryLock",
	"ProgramBegin", "ProgramEnd", "NonBlockingCollectiveRequest",
	"NonBlockingCollectiveComplete", "CommCreate", "CommDestroy", "Generic",
	"BufferFlush"
};

const char *weft__pallas_record_name(int32_t record)
{
	return record >= 0 && record < WEFT_PALLAS_REC_COUNT ? record_names[record]
							       : NULL;
}

/* ---- Payload layouts ------------------------------------------------------------ */

enum slot_kind { SLOT_U32, SLOT_U64, SLOT_REGION, SLOT_STRING };

typedef struct payload_slot {
	const char *name;
	uint8_t kind;
} payload_slot;

typedef struct payload_layout {
	int32_t record;
	uint8_t slot_count;
	payload_slot slots[5];
} payload_layout;

/* The payloads Pallas's record functions push, field by field. */
static const payload_layout layouts[] = {
	{ WEFT_PALLAS_REC_ENTER, 1, { { "region", SLOT_REGION } } },
	{ WEFT_PALLAS_REC_LEAVE, 1, { { "region", SLOT_REGION } } },
	{ WEFT_PALLAS_REC_MPI_SEND, 4, { { "peer", SLOT_U32 }, { "comm", SLOT_U32 },
		{ "tag", SLOT_U32 }, { "length", SLOT_U64 } } },
	{ WEFT_PALLAS_REC_MPI_RECV, 4, { { "peer", SLOT_U32 }, { "comm", SLOT_U32 },
		{ "tag", SLOT_U32 }, { "length", SLOT_U64 } } },
	{ WEFT_PALLAS_REC_MPI_ISEND, 5, { { "peer", SLOT_U32 }, { "comm", SLOT_U32 },
		{ "tag", SLOT_U32 }, { "length", SLOT_U64 }, { "request", SLOT_U64 } } },
	{ WEFT_PALLAS_REC_MPI_IRECV, 5, { { "peer", SLOT_U32 }, { "comm", SLOT_U32 },
		{ "tag", SLOT_U32 }, { "length", SLOT_U64 }, { "request", SLOT_U64 } } },
	{ WEFT_PALLAS_REC_MPI_ISEND_COMPLETE, 1, { { "request", SLOT_U64 } } },
	{ WEFT_PALLAS_REC_MPI_IRECV_REQUEST, 1, { { "request", SLOT_U64 } } },
	{ WEFT_PALLAS_REC_MPI_COLLECTIVE_END, 5, { { "op", SLOT_U32 },
		{ "comm", SLOT_U32 }, { "root", SLOT_U32 }, { "sent", SLOT_U64 },
		{ "received", SLOT_U64 } } },
	{ WEFT_PALLAS_REC_OMP_FORK, 1, { { "requested_threads", SLOT_U32 } } },
	{ WEFT_PALLAS_REC_THREAD_FORK, 1, { { "requested_threads", SLOT_U32 } } },
	/* Pallas 0.20 stores the lock id only (its acquisition order is not
	 * pushed), as weft's writer does. */
	{ WEFT_PALLAS_REC_OMP_ACQUIRE_LOCK, 1, { { "lock", SLOT_U32 } } },
	{ WEFT_PALLAS_REC_OMP_RELEASE_LOCK, 1, { { "lock", SLOT_U32 } } },
	{ WEFT_PALLAS_REC_THREAD_ACQUIRE_LOCK, 1, { { "lock", SLOT_U32 } } },
	{ WEFT_PALLAS_REC_THREAD_RELEASE_LOCK, 1, { { "lock", SLOT_U32 } } },
	{ WEFT_PALLAS_REC_OMP_TASK_CREATE, 1, { { "task", SLOT_U64 } } },
	{ WEFT_PALLAS_REC_OMP_TASK_SWITCH, 1, { { "task", SLOT_U64 } } },
	{ WEFT_PALLAS_REC_OMP_TASK_COMPLETE, 1, { { "task", SLOT_U64 } } },
	{ WEFT_PALLAS_REC_GENERIC, 1, { { "name", SLOT_STRING } } },
};

static const payload_layout *find_layout(int32_t record)
{
	for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
		if (layouts[i].record == record)
			return &layouts[i];
	return NULL;
}

static size_t slot_size(uint8_t kind)
{
	return kind == SLOT_U64 ? 8 : 4;
}

/* Total payload bytes of a layout. */
static size_t layout_size(const payload_layout *l)
{
	size_t n = 0;
	for (int i = 0; i < l->slot_count; i++)
		n += slot_size(l->slots[i].kind);
	return n;
}

const pallas_string *weft__pallas_string(const pallas_trace *pt,
					 const pallas_archive *a, uint32_t ref)
{
	const pallas_string *s = a ? weft__pallas_find_string(&a->defs, ref) : NULL;
	return s ? s : weft__pallas_find_string(&pt->defs, ref);
}

static const pallas_region *find_region(const pallas_trace *pt,
					const pallas_archive *a, uint32_t ref)
{
	const pallas_region *r = a ? weft__pallas_find_region(&a->defs, ref) : NULL;
	return r ? r : weft__pallas_find_region(&pt->defs, ref);
}

static const pallas_attribute *find_attribute(const pallas_trace *pt,
					      const pallas_archive *a, uint32_t ref)
{
	const pallas_attribute *r = a ? weft__pallas_find_attribute(&a->defs, ref)
				      : NULL;
	return r ? r : weft__pallas_find_attribute(&pt->defs, ref);
}

static void set_name(weft_field *f, const char *name)
{
	f->name = name;
	f->name_len = (uint32_t)strlen(name);
}

static void set_text(weft_field *f, const pallas_string *s)
{
	f->type = WEFT_TYPE_STR;
	f->v.s.ptr = s ? s->text : "";
	f->v.s.len = s ? s->len : 0;
}

/*
 * Adds the fields of one payload slot: the number, and for references the
 * resolved name (`region` = name, `region_ref` = number).
 */
static int add_slot(const pallas_trace *pt, const pallas_archive *a,
		    const payload_slot *slot, const uint8_t *p,
		    weft_field *out, size_t cap, int n)
{
	weft_field f;
	memset(&f, 0, sizeof f);
	if (slot->kind == SLOT_U64) {
		set_name(&f, slot->name);
		f.type = WEFT_TYPE_U64;
		f.v.u = weft__pallas_le64(p);
	} else if (slot->kind == SLOT_U32) {
		set_name(&f, slot->name);
		f.type = WEFT_TYPE_U32;
		f.v.u = weft__pallas_le32(p);
	} else {
		uint32_t ref = weft__pallas_le32(p);
		const pallas_string *s = NULL;
		if (slot->kind == SLOT_REGION) {
			const pallas_region *r = find_region(pt, a, ref);
			s = r ? weft__pallas_string(pt, a, r->name) : NULL;
		} else {
			s = weft__pallas_string(pt, a, ref);
		}
		set_name(&f, slot->name);
		set_text(&f, s);
		if ((size_t)n < cap)
			out[n] = f;
		n++;
		memset(&f, 0, sizeof f);
		set_name(&f, slot->kind == SLOT_REGION ? "region_ref" : "name_ref");
		f.type = WEFT_TYPE_U32;
		f.v.u = ref;
	}
	if ((size_t)n < cap)
		out[n] = f;
	return n + 1;
}

/* The value of one attribute entry, typed by its definition. */
static void attribute_value(const pallas_trace *pt, const pallas_archive *a,
			    uint8_t type, const uint8_t *v, size_t size,
			    weft_field *f)
{
	static const struct { uint8_t size; weft_type type; } scalar[] = {
		[WEFT_PALLAS_ATTR_UINT8] = { 1, WEFT_TYPE_U8 },
		[WEFT_PALLAS_ATTR_UINT16] = { 2, WEFT_TYPE_U16 },
		[WEFT_PALLAS_ATTR_UINT32] = { 4, WEFT_TYPE_U32 },
		[WEFT_PALLAS_ATTR_UINT64] = { 8, WEFT_TYPE_U64 },
		[WEFT_PALLAS_ATTR_INT8] = { 1, WEFT_TYPE_I8 },
		[WEFT_PALLAS_ATTR_INT16] = { 2, WEFT_TYPE_I16 },
		[WEFT_PALLAS_ATTR_INT32] = { 4, WEFT_TYPE_I32 },
		[WEFT_PALLAS_ATTR_INT64] = { 8, WEFT_TYPE_I64 },
		[WEFT_PALLAS_ATTR_FLOAT] = { 4, WEFT_TYPE_F32 },
		[WEFT_PALLAS_ATTR_DOUBLE] = { 8, WEFT_TYPE_F64 },
	};
	if (type == WEFT_PALLAS_ATTR_STRING && size >= 4) {
		set_text(f, weft__pallas_string(pt, a, weft__pallas_le32(v)));
		return;
	}
	if (type < sizeof scalar / sizeof scalar[0] && scalar[type].size > 0 &&
	    size >= scalar[type].size) {
		weft__field_set_scalar(f, scalar[type].type, v, 0);
		return;
	}
	if (type > WEFT_PALLAS_ATTR_STRING && size >= 4) {
		f->type = WEFT_TYPE_U32; /* a reference to another definition */
		f->v.u = weft__pallas_le32(v);
		return;
	}
	f->type = WEFT_TYPE_BYTES;
	f->v.s.ptr = (const char *)v;
	f->v.s.len = size;
}

/*
 * The attributes of one occurrence: the list weft_event.data points to,
 * `i32 index | u16 size | u8 count`, then count entries `u16 size | u32
 * ref | value`. Checked against the list size.
 */
static int add_attributes(const pallas_trace *pt, const pallas_archive *a,
			  const weft_event *ev, weft_field *out, size_t cap, int n)
{
	const uint8_t *list = ev->data;
	uint64_t size = ev->data_size, pos = 7;
	if (list == NULL || size < 7)
		return n;
	uint8_t count = list[6];
	for (uint8_t i = 0; i < count; i++) {
		uint16_t entry_size;
		if (size - pos < 6)
			return WEFT_EFORMAT;
		memcpy(&entry_size, list + pos, 2);
		if (entry_size < 6 || entry_size > size - pos)
			return WEFT_EFORMAT;
		uint32_t ref = weft__pallas_le32(list + pos + 2);
		const pallas_attribute *def = find_attribute(pt, a, ref);
		weft_field f;
		memset(&f, 0, sizeof f);
		const pallas_string *name = def ? weft__pallas_string(pt, a, def->name)
						: NULL;
		f.name = name ? name->text : "attribute";
		f.name_len = name ? name->len : (uint32_t)strlen("attribute");
		attribute_value(pt, a, def ? def->type : 0, list + pos + 6,
				entry_size - 6u, &f);
		if ((size_t)n < cap)
			out[n] = f;
		n++;
		pos += entry_size;
	}
	return n;
}

/*
 * The record kind of an event, from its code: the code points at the name
 * in record_names (compared by address first, then by text for events
 * whose code was copied). -1 when unknown.
 */
static int32_t record_of(const weft_event *event)
{
	for (int32_t r = 0; r < WEFT_PALLAS_REC_COUNT; r++)
		if (event->code == record_names[r])
			return r;
	for (int32_t r = 0; r < WEFT_PALLAS_REC_COUNT; r++)
		if (strlen(record_names[r]) == event->code_len &&
		    memcmp(record_names[r], event->code, event->code_len) == 0)
			return r;
	return -1;
}

int weft__pallas_event_fields(const weft_trace *trace, const weft_event *event,
			      weft_field *out, size_t cap)
{
	const pallas_trace *pt = trace->backend_data;
	const pallas_archive *a = NULL;
	if (event->stream < pt->stream_count)
		a = &pt->archives[pt->streams[event->stream].archive];
	const payload_layout *l = find_layout(record_of(event));
	int n = 0;
	if (l != NULL && layout_size(l) == event->payload_size) {
		const uint8_t *p = event->payload;
		for (int i = 0; i < l->slot_count; i++) {
			n = add_slot(pt, a, &l->slots[i], p, out, cap, n);
			p += slot_size(l->slots[i].kind);
		}
	} else if (event->payload_size > 0) {
		weft_field f;
		memset(&f, 0, sizeof f);
		set_name(&f, "payload");
		f.type = WEFT_TYPE_BYTES;
		f.v.s.ptr = (const char *)event->payload;
		f.v.s.len = event->payload_size;
		if (cap > 0)
			out[0] = f;
		n = 1;
	}
	return add_attributes(pt, a, event, out, cap, n);
}

/* The block role of a record kind, as Pallas's record functions store it. */
static int record_role(int32_t record)
{
	switch (record) {
	case WEFT_PALLAS_REC_ENTER: case WEFT_PALLAS_REC_OMP_FORK:
	case WEFT_PALLAS_REC_THREAD_FORK: case WEFT_PALLAS_REC_THREAD_TEAM_BEGIN:
	case WEFT_PALLAS_REC_THREAD_BEGIN:
		return WEFT_PALLAS_ROLE_BLOCK_START;
	case WEFT_PALLAS_REC_LEAVE: case WEFT_PALLAS_REC_OMP_JOIN:
	case WEFT_PALLAS_REC_THREAD_JOIN: case WEFT_PALLAS_REC_THREAD_TEAM_END:
	case WEFT_PALLAS_REC_THREAD_END:
		return WEFT_PALLAS_ROLE_BLOCK_END;
	default:
		return WEFT_PALLAS_ROLE_SINGLE;
	}
}

int weft_pallas_event_record(const weft_trace *trace, const weft_event *event,
			     weft_pallas_record_info *out)
{
	memset(out, 0, sizeof *out);
	if (trace == NULL || event == NULL || weft_trace_format(trace) != WEFT_FORMAT_PALLAS)
		return weft__error(WEFT_EUNSUPPORTED, NULL, WEFT_NO_OFFSET,
				   "Pallas records exist in Pallas traces only");
	out->record = record_of(event);
	out->role = record_role(out->record);
	const payload_layout *l = find_layout(out->record);
	if (l != NULL && layout_size(l) == event->payload_size) {
		for (int i = 0; i < l->slot_count; i++)
			out->payload_fields += l->slots[i].kind == SLOT_REGION ||
					       l->slots[i].kind == SLOT_STRING ? 2 : 1;
	} else {
		out->payload_fields = event->payload_size > 0;
	}
	return 0;
}

/* A 64-bit mix of the four numbers that name a message channel. */
static uint64_t message_key(uint32_t from, uint32_t to, uint32_t tag, uint32_t comm)
{
	uint64_t h = ((uint64_t)from << 32 | to) * 0x9E3779B97F4A7C15ull;
	h ^= ((uint64_t)tag << 32 | comm) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
	return h * 0xC2B2AE3D27D4EB4Full;
}

/*
 * MPI point-to-point sends and receives are message ends: the sender's
 * rank is its archive's location group id (EZTrace writes one location
 * group per MPI rank), the peer as recorded; the n-th send from A to B
 * with a tag on a communicator meets the n-th receive of B from A with
 * that tag on it. 1 when the event is one.
 */
static int classify_message(const pallas_trace *pt, const weft_event *event,
			    int32_t record, weft_event_class *out)
{
	int send = record == WEFT_PALLAS_REC_MPI_SEND || record == WEFT_PALLAS_REC_MPI_ISEND;
	int recv = record == WEFT_PALLAS_REC_MPI_RECV || record == WEFT_PALLAS_REC_MPI_IRECV;

	if ((!send && !recv) || event->payload_size < 12)
		return 0;
	uint32_t self = pt->archives[pt->streams[event->stream].archive].id;
	uint32_t peer = weft__pallas_le32(event->payload);
	uint32_t comm = weft__pallas_le32(event->payload + 4);
	uint32_t tag = weft__pallas_le32(event->payload + 8);
	out->flow = send ? WEFT_FLOW_OUT : WEFT_FLOW_IN;
	out->flow_key = send ? message_key(self, peer, tag, comm)
			     : message_key(peer, self, tag, comm);
	return 1;
}

/*
 * weft_event_classify() for Pallas: Enter and Leave open and close the
 * span of their region on the thread's own timeline (one call tree per
 * thread), named after the region; MPI records are points of the "mpi"
 * category, the others points of "pallas".
 */
void weft__pallas_event_classify(const weft_trace *trace, const weft_event *event,
				 weft_event_class *out)
{
	const pallas_trace *pt = trace->backend_data;
	int32_t record = record_of(event);

	out->category = event->code_len > 4 && memcmp(event->code, "MPI_", 4) == 0
			? "mpi" : "pallas";
	if (event->stream < pt->stream_count && classify_message(pt, event, record, out))
		return;
	if ((record != WEFT_PALLAS_REC_ENTER && record != WEFT_PALLAS_REC_LEAVE) ||
	    event->payload_size != 4 || event->stream >= pt->stream_count)
		return;
	uint32_t ref = weft__pallas_le32(event->payload);
	out->role = record == WEFT_PALLAS_REC_ENTER ? WEFT_ROLE_ENTER : WEFT_ROLE_LEAVE;
	out->pair_key = ref;
	const pallas_archive *a = &pt->archives[pt->streams[event->stream].archive];
	const pallas_region *r = find_region(pt, a, ref);
	const pallas_string *s = r ? weft__pallas_string(pt, a, r->name) : NULL;
	out->name = s != NULL ? s->text : NULL;
}

/* ---- Event kinds (weft/schema.h) --------------------------------------------------- */

/*
 * One kind per record kind, with the fields weft__pallas_event_fields()
 * gives: a payload layout's slots (references with their resolved name
 * first: `region` and `region_ref`), or the payload as bytes for the
 * kinds without a layout (only the events that have one); then the
 * occurrence's attributes, known per event. Built once, shared, never
 * freed.
 */
static weft_event_schema kinds[WEFT_PALLAS_REC_COUNT];
static weft_field_schema kind_fields[WEFT_PALLAS_REC_COUNT * 10];
static pthread_once_t kinds_once = PTHREAD_ONCE_INIT;

/* The fields of one payload slot, from *f on (two for a reference). */
static void slot_fields(const payload_slot *slot, weft_field_schema **f)
{
	if (slot->kind == SLOT_U32 || slot->kind == SLOT_U64) {
		*(*f)++ = (weft_field_schema){ slot->name,
			slot->kind == SLOT_U64 ? WEFT_TYPE_U64 : WEFT_TYPE_U32, 0, 0, 0 };
		return;
	}
	*(*f)++ = (weft_field_schema){ slot->name, WEFT_TYPE_STR, 0, 1, 0 };
	*(*f)++ = (weft_field_schema){ slot->kind == SLOT_REGION ? "region_ref" : "name_ref",
		WEFT_TYPE_U32, 0, 0, 0 };
}

/* Builds every kind once. */
static void kinds_build(void)
{
	weft_field_schema *f = kind_fields;
	for (int32_t r = 0; r < WEFT_PALLAS_REC_COUNT; r++) {
		const payload_layout *l = find_layout(r);
		weft_event_schema *k = &kinds[r];
		*k = (weft_event_schema){ record_names[r], 0,
			r == WEFT_PALLAS_REC_ENTER ? WEFT_ROLE_ENTER :
			r == WEFT_PALLAS_REC_LEAVE ? WEFT_ROLE_LEAVE : WEFT_ROLE_POINT,
			strncmp(record_names[r], "MPI_", 4) == 0 ? "mpi" : "pallas", 0, 0, f, 1 };
		if (l == NULL)
			*f++ = (weft_field_schema){ "payload", WEFT_TYPE_BYTES, 0, 1, 0 };
		for (int i = 0; l != NULL && i < l->slot_count; i++)
			slot_fields(&l->slots[i], &f);
		k->field_count = (size_t)(f - k->fields);
	}
}

size_t weft__pallas_event_schemas(const weft_trace *trace, const weft_event_schema **out)
{
	(void)trace;
	pthread_once(&kinds_once, kinds_build);
	*out = kinds;
	return WEFT_PALLAS_REC_COUNT;
}
