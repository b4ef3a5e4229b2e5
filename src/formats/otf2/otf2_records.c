/* SPDX-License-Identifier: MIT */
/*
 * formats/otf2/otf2_records.c - the event records of OTF2 3.0 as weft
 * events: one libotf2 callback per record kind packs the record into the
 * reader's batch (otf2_internal.h: a u64 slot per field, the attribute
 * list apart), and the same table names the fields back
 * (weft_event_fields()), classifies the events and lists the kinds.
 *
 * The record list is written once, as an X-macro: RECORDS(R) names each
 * kind (its libotf2 name, weft's code, its category) and F_<kind>(X) its
 * fields (libotf2's parameter type and name, weft's field name, what the
 * number refers to). The callbacks, the kind enumeration, the field
 * tables and the registrations are all expanded from it, so a kind can
 * not be read one way and named another. Metric and ProgramBegin carry
 * arrays and are written by hand.
 *
 * Names: the codes are Pallas's record names where Pallas has the record
 * ("Enter", "MPI_Send", "OMP_Fork"), so that an OTF2 trace and the Pallas
 * trace EZTrace writes of the same run read alike; the fields they share
 * with Pallas have Pallas's field names (peer, comm, tag, length,
 * request...), the others OTF2's in snake case (docs/otf2.md).
 */
#include <pthread.h>
#include <string.h>

#include "formats/otf2/otf2_internal.h"

/* libotf2 3.0 still reads the OpenMP records, with deprecated setters. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* ---- The records ---------------------------------------------------------------- */

#define F_BufferFlush(X) X(OTF2_TimeStamp, stopTime, "stop_time", OTF2_REF_TIME)
#define F_MeasurementOnOff(X) X(OTF2_MeasurementMode, measurementMode, "mode", OTF2_REF_NONE)
#define F_Enter(X) X(OTF2_RegionRef, region, "region", OTF2_REF_REGION)
#define F_Leave(X) F_Enter(X)
#define X_P2P(X, who) X(uint32_t, who, "peer", OTF2_REF_NONE) \
	X(OTF2_CommRef, communicator, "comm", OTF2_REF_COMM) \
	X(uint32_t, msgTag, "tag", OTF2_REF_NONE) X(uint64_t, msgLength, "length", OTF2_REF_NONE)
#define X_REQUEST(X) X(uint64_t, requestID, "request", OTF2_REF_NONE)
#define F_MpiSend(X) X_P2P(X, receiver)
#define F_MpiIsend(X) X_P2P(X, receiver) X_REQUEST(X)
#define F_MpiIsendComplete(X) X_REQUEST(X)
#define F_MpiIrecvRequest(X) X_REQUEST(X)
#define F_MpiRecv(X) X_P2P(X, sender)
#define F_MpiIrecv(X) X_P2P(X, sender) X_REQUEST(X)
#define F_MpiRequestTest(X) X_REQUEST(X)
#define F_MpiRequestCancelled(X) X_REQUEST(X)
#define F_MpiCollectiveBegin(X)
#define X_COLLECTIVE(X) X(OTF2_CollectiveOp, collectiveOp, "op", OTF2_REF_NONE) \
	X(OTF2_CommRef, communicator, "comm", OTF2_REF_COMM) \
	X(uint32_t, root, "root", OTF2_REF_NONE) X(uint64_t, sizeSent, "sent", OTF2_REF_NONE) \
	X(uint64_t, sizeReceived, "received", OTF2_REF_NONE)
#define F_MpiCollectiveEnd(X) X_COLLECTIVE(X)
#define X_THREADS(X) X(uint32_t, numberOfRequestedThreads, "requested_threads", OTF2_REF_NONE)
#define F_OmpFork(X) X_THREADS(X)
#define F_OmpJoin(X)
#define X_LOCK(X) X(uint32_t, lockID, "lock", OTF2_REF_NONE) \
	X(uint32_t, acquisitionOrder, "acquisition_order", OTF2_REF_NONE)
#define F_OmpAcquireLock(X) X_LOCK(X)
#define F_OmpReleaseLock(X) X_LOCK(X)
#define X_TASK(X) X(uint64_t, taskID, "task", OTF2_REF_NONE)
#define F_OmpTaskCreate(X) X_TASK(X)
#define F_OmpTaskSwitch(X) X_TASK(X)
#define F_OmpTaskComplete(X) X_TASK(X)
#define X_PARAMETER(X) X(OTF2_ParameterRef, parameter, "parameter", OTF2_REF_PARAMETER)
#define F_ParameterString(X) X_PARAMETER(X) X(OTF2_StringRef, string, "value", OTF2_REF_STRING)
#define F_ParameterInt(X) X_PARAMETER(X) X(int64_t, value, "value", OTF2_REF_NONE)
#define F_ParameterUnsignedInt(X) X_PARAMETER(X) X(uint64_t, value, "value", OTF2_REF_NONE)
#define X_WIN(X) X(OTF2_RmaWinRef, win, "win", OTF2_REF_RMA_WIN)
#define X_REMOTE(X) X(uint32_t, remote, "remote", OTF2_REF_NONE)
#define X_SYNC_LEVEL(X) X(OTF2_RmaSyncLevel, syncLevel, "sync_level", OTF2_REF_NONE)
#define X_MATCHING(X) X(uint64_t, matchingId, "matching_id", OTF2_REF_NONE)
#define F_RmaWinCreate(X) X_WIN(X)
#define F_RmaWinDestroy(X) X_WIN(X)
#define F_RmaCollectiveBegin(X)
#define F_RmaCollectiveEnd(X) X(OTF2_CollectiveOp, collectiveOp, "op", OTF2_REF_NONE) \
	X_SYNC_LEVEL(X) X_WIN(X) X(uint32_t, root, "root", OTF2_REF_NONE) \
	X(uint64_t, bytesSent, "sent", OTF2_REF_NONE) \
	X(uint64_t, bytesReceived, "received", OTF2_REF_NONE)
#define F_RmaGroupSync(X) X_SYNC_LEVEL(X) X_WIN(X) X(OTF2_GroupRef, group, "group", OTF2_REF_GROUP)
#define X_RMA_LOCK(X) X_WIN(X) X_REMOTE(X) X(uint64_t, lockId, "lock", OTF2_REF_NONE)
#define X_LOCK_TYPE(X) X(OTF2_LockType, lockType, "lock_type", OTF2_REF_NONE)
#define F_RmaRequestLock(X) X_RMA_LOCK(X) X_LOCK_TYPE(X)
#define F_RmaAcquireLock(X) X_RMA_LOCK(X) X_LOCK_TYPE(X)
#define F_RmaTryLock(X) X_RMA_LOCK(X) X_LOCK_TYPE(X)
#define F_RmaReleaseLock(X) X_RMA_LOCK(X)
#define F_RmaSync(X) X_WIN(X) X_REMOTE(X) X(OTF2_RmaSyncType, syncType, "sync_type", OTF2_REF_NONE)
#define F_RmaWaitChange(X) X_WIN(X)
#define X_RMA_TRANSFER(X) X_WIN(X) X_REMOTE(X) X(uint64_t, bytes, "bytes", OTF2_REF_NONE) X_MATCHING(X)
#define F_RmaPut(X) X_RMA_TRANSFER(X)
#define F_RmaGet(X) X_RMA_TRANSFER(X)
#define F_RmaAtomic(X) X_WIN(X) X_REMOTE(X) \
	X(OTF2_RmaAtomicType, type, "atomic_type", OTF2_REF_NONE) \
	X(uint64_t, bytesSent, "sent", OTF2_REF_NONE) \
	X(uint64_t, bytesReceived, "received", OTF2_REF_NONE) X_MATCHING(X)
#define F_RmaOpCompleteBlocking(X) X_WIN(X) X_MATCHING(X)
#define F_RmaOpCompleteNonBlocking(X) X_WIN(X) X_MATCHING(X)
#define F_RmaOpTest(X) X_WIN(X) X_MATCHING(X)
#define F_RmaOpCompleteRemote(X) X_WIN(X) X_MATCHING(X)
#define X_MODEL(X) X(OTF2_Paradigm, model, "model", OTF2_REF_NONE)
#define F_ThreadFork(X) X_MODEL(X) X_THREADS(X)
#define F_ThreadJoin(X) X_MODEL(X)
#define X_TEAM(X) X(OTF2_CommRef, threadTeam, "team", OTF2_REF_COMM)
#define F_ThreadTeamBegin(X) X_TEAM(X)
#define F_ThreadTeamEnd(X) X_TEAM(X)
#define F_ThreadAcquireLock(X) X_MODEL(X) X_LOCK(X)
#define F_ThreadReleaseLock(X) X_MODEL(X) X_LOCK(X)
#define X_THREAD_TASK(X) X_TEAM(X) \
	X(uint32_t, creatingThread, "creating_thread", OTF2_REF_NONE) \
	X(uint32_t, generationNumber, "generation", OTF2_REF_NONE)
#define F_ThreadTaskCreate(X) X_THREAD_TASK(X)
#define F_ThreadTaskSwitch(X) X_THREAD_TASK(X)
#define F_ThreadTaskComplete(X) X_THREAD_TASK(X)
#define X_CONTINGENT(X) X(OTF2_CommRef, threadContingent, "contingent", OTF2_REF_COMM) \
	X(uint64_t, sequenceCount, "sequence", OTF2_REF_NONE)
#define F_ThreadCreate(X) X_CONTINGENT(X)
#define F_ThreadBegin(X) X_CONTINGENT(X)
#define F_ThreadWait(X) X_CONTINGENT(X)
#define F_ThreadEnd(X) X_CONTINGENT(X)
#define X_CONTEXT(X) X(OTF2_CallingContextRef, callingContext, "calling_context", OTF2_REF_NONE)
#define X_UNWIND(X) X(uint32_t, unwindDistance, "unwind_distance", OTF2_REF_NONE)
#define F_CallingContextEnter(X) X_CONTEXT(X) X_UNWIND(X)
#define F_CallingContextLeave(X) X_CONTEXT(X)
#define F_CallingContextSample(X) X_CONTEXT(X) X_UNWIND(X) \
	X(OTF2_InterruptGeneratorRef, interruptGenerator, "interrupt_generator", OTF2_REF_NONE)
#define X_HANDLE(X) X(OTF2_IoHandleRef, handle, "handle", OTF2_REF_IO_HANDLE)
#define X_STATUS(X) X(OTF2_IoStatusFlag, statusFlags, "status_flags", OTF2_REF_NONE)
#define F_IoCreateHandle(X) X_HANDLE(X) X(OTF2_IoAccessMode, mode, "access_mode", OTF2_REF_NONE) \
	X(OTF2_IoCreationFlag, creationFlags, "creation_flags", OTF2_REF_NONE) X_STATUS(X)
#define F_IoDestroyHandle(X) X_HANDLE(X)
#define F_IoDuplicateHandle(X) X(OTF2_IoHandleRef, oldHandle, "old_handle", OTF2_REF_IO_HANDLE) \
	X(OTF2_IoHandleRef, newHandle, "new_handle", OTF2_REF_IO_HANDLE) X_STATUS(X)
#define F_IoSeek(X) X_HANDLE(X) X(int64_t, offsetRequest, "offset_request", OTF2_REF_NONE) \
	X(OTF2_IoSeekOption, whence, "whence", OTF2_REF_NONE) \
	X(uint64_t, offsetResult, "offset_result", OTF2_REF_NONE)
#define F_IoChangeStatusFlags(X) X_HANDLE(X) X_STATUS(X)
#define F_IoDeleteFile(X) X(OTF2_IoParadigmRef, ioParadigm, "io_paradigm", OTF2_REF_NONE) \
	X(OTF2_IoFileRef, file, "file", OTF2_REF_IO_FILE)
#define F_IoOperationBegin(X) X_HANDLE(X) \
	X(OTF2_IoOperationMode, mode, "operation_mode", OTF2_REF_NONE) \
	X(OTF2_IoOperationFlag, operationFlags, "operation_flags", OTF2_REF_NONE) \
	X(uint64_t, bytesRequest, "bytes_request", OTF2_REF_NONE) X_MATCHING(X)
#define F_IoOperationTest(X) X_HANDLE(X) X_MATCHING(X)
#define F_IoOperationIssued(X) X_HANDLE(X) X_MATCHING(X)
#define F_IoOperationComplete(X) X_HANDLE(X) \
	X(uint64_t, bytesResult, "bytes_result", OTF2_REF_NONE) X_MATCHING(X)
#define F_IoOperationCancelled(X) X_HANDLE(X) X_MATCHING(X)
#define F_IoAcquireLock(X) X_HANDLE(X) X_LOCK_TYPE(X)
#define F_IoReleaseLock(X) X_HANDLE(X) X_LOCK_TYPE(X)
#define F_IoTryLock(X) X_HANDLE(X) X_LOCK_TYPE(X)
#define F_ProgramEnd(X) X(int64_t, exitStatus, "exit_status", OTF2_REF_NONE)
#define F_NonBlockingCollectiveRequest(X) X_REQUEST(X)
#define F_NonBlockingCollectiveComplete(X) X_COLLECTIVE(X) X_REQUEST(X)
#define F_CommCreate(X) X(OTF2_CommRef, communicator, "comm", OTF2_REF_COMM)
#define F_CommDestroy(X) F_CommCreate(X)

/* Every record kind with scalar fields: libotf2 name, weft code, category. */
#define RECORDS(R) \
	R(BufferFlush, "BufferFlush", "otf2") \
	R(MeasurementOnOff, "MeasurementOnOff", "otf2") \
	R(Enter, "Enter", "otf2") \
	R(Leave, "Leave", "otf2") \
	R(MpiSend, "MPI_Send", "mpi") \
	R(MpiIsend, "MPI_Isend", "mpi") \
	R(MpiIsendComplete, "MPI_IsendComplete", "mpi") \
	R(MpiIrecvRequest, "MPI_IrecvRequest", "mpi") \
	R(MpiRecv, "MPI_Recv", "mpi") \
	R(MpiIrecv, "MPI_Irecv", "mpi") \
	R(MpiRequestTest, "MPI_RequestTest", "mpi") \
	R(MpiRequestCancelled, "MPI_RequestCancelled", "mpi") \
	R(MpiCollectiveBegin, "MPI_CollectiveBegin", "mpi") \
	R(MpiCollectiveEnd, "MPI_CollectiveEnd", "mpi") \
	R(OmpFork, "OMP_Fork", "openmp") \
	R(OmpJoin, "OMP_Join", "openmp") \
	R(OmpAcquireLock, "OMP_AcquireLock", "openmp") \
	R(OmpReleaseLock, "OMP_ReleaseLock", "openmp") \
	R(OmpTaskCreate, "OMP_TaskCreate", "openmp") \
	R(OmpTaskSwitch, "OMP_TaskSwitch", "openmp") \
	R(OmpTaskComplete, "OMP_TaskComplete", "openmp") \
	R(ParameterString, "ParameterString", "otf2") \
	R(ParameterInt, "ParameterInt", "otf2") \
	R(ParameterUnsignedInt, "ParameterUnsignedInt", "otf2") \
	R(RmaWinCreate, "RmaWinCreate", "rma") \
	R(RmaWinDestroy, "RmaWinDestroy", "rma") \
	R(RmaCollectiveBegin, "RmaCollectiveBegin", "rma") \
	R(RmaCollectiveEnd, "RmaCollectiveEnd", "rma") \
	R(RmaGroupSync, "RmaGroupSync", "rma") \
	R(RmaRequestLock, "RmaRequestLock", "rma") \
	R(RmaAcquireLock, "RmaAcquireLock", "rma") \
	R(RmaTryLock, "RmaTryLock", "rma") \
	R(RmaReleaseLock, "RmaReleaseLock", "rma") \
	R(RmaSync, "RmaSync", "rma") \
	R(RmaWaitChange, "RmaWaitChange", "rma") \
	R(RmaPut, "RmaPut", "rma") \
	R(RmaGet, "RmaGet", "rma") \
	R(RmaAtomic, "RmaAtomic", "rma") \
	R(RmaOpCompleteBlocking, "RmaOpCompleteBlocking", "rma") \
	R(RmaOpCompleteNonBlocking, "RmaOpCompleteNonBlocking", "rma") \
	R(RmaOpTest, "RmaOpTest", "rma") \
	R(RmaOpCompleteRemote, "RmaOpCompleteRemote", "rma") \
	R(ThreadFork, "ThreadFork", "thread") \
	R(ThreadJoin, "ThreadJoin", "thread") \
	R(ThreadTeamBegin, "ThreadTeamBegin", "thread") \
	R(ThreadTeamEnd, "ThreadTeamEnd", "thread") \
	R(ThreadAcquireLock, "ThreadAcquireLock", "thread") \
	R(ThreadReleaseLock, "ThreadReleaseLock", "thread") \
	R(ThreadTaskCreate, "ThreadTaskCreate", "thread") \
	R(ThreadTaskSwitch, "ThreadTaskSwitch", "thread") \
	R(ThreadTaskComplete, "ThreadTaskComplete", "thread") \
	R(ThreadCreate, "ThreadCreate", "thread") \
	R(ThreadBegin, "ThreadBegin", "thread") \
	R(ThreadWait, "ThreadWait", "thread") \
	R(ThreadEnd, "ThreadEnd", "thread") \
	R(CallingContextEnter, "CallingContextEnter", "sampling") \
	R(CallingContextLeave, "CallingContextLeave", "sampling") \
	R(CallingContextSample, "CallingContextSample", "sampling") \
	R(IoCreateHandle, "IoCreateHandle", "io") \
	R(IoDestroyHandle, "IoDestroyHandle", "io") \
	R(IoDuplicateHandle, "IoDuplicateHandle", "io") \
	R(IoSeek, "IoSeek", "io") \
	R(IoChangeStatusFlags, "IoChangeStatusFlags", "io") \
	R(IoDeleteFile, "IoDeleteFile", "io") \
	R(IoOperationBegin, "IoOperationBegin", "io") \
	R(IoOperationTest, "IoOperationTest", "io") \
	R(IoOperationIssued, "IoOperationIssued", "io") \
	R(IoOperationComplete, "IoOperationComplete", "io") \
	R(IoOperationCancelled, "IoOperationCancelled", "io") \
	R(IoAcquireLock, "IoAcquireLock", "io") \
	R(IoReleaseLock, "IoReleaseLock", "io") \
	R(IoTryLock, "IoTryLock", "io") \
	R(ProgramEnd, "ProgramEnd", "otf2") \
	R(NonBlockingCollectiveRequest, "NonBlockingCollectiveRequest", "mpi") \
	R(NonBlockingCollectiveComplete, "NonBlockingCollectiveComplete", "mpi") \
	R(CommCreate, "CommCreate", "mpi") \
	R(CommDestroy, "CommDestroy", "mpi")

/* The kinds: the scalar ones, then the three written by hand. */
enum record_kind {
#define KIND(name, code, cat) K_##name,
	RECORDS(KIND)
#undef KIND
	K_Metric, K_ProgramBegin, K_Unknown, K_COUNT
};

/* weft's type of a libotf2 parameter type (OTF2's enumerations are uintN_t). */
#define TYPE_OF(t) _Generic((t)0, uint8_t: WEFT_TYPE_U8, uint16_t: WEFT_TYPE_U16, \
			    uint32_t: WEFT_TYPE_U32, int64_t: WEFT_TYPE_I64, default: WEFT_TYPE_U64)

typedef struct rec_field {
	const char *name;
	weft_type type;
	otf2_ref ref;
} rec_field;

typedef struct rec_kind {
	const char *code;
	const char *category;
	const rec_field *fields;
	uint32_t field_count;
} rec_kind;

#define FIELD(t, n, name, ref) { name, TYPE_OF(t), ref },
#define FIELD_TABLE(kind, code, cat) \
	static const rec_field fields_##kind[] = { F_##kind(FIELD) { NULL, 0, 0 } };
RECORDS(FIELD_TABLE)
#undef FIELD_TABLE

static const rec_field fields_Metric[] = {
	{ "metric", WEFT_TYPE_U32, OTF2_REF_METRIC }, { NULL, 0, 0 } };
static const rec_field fields_ProgramBegin[] = {
	{ "program", WEFT_TYPE_U32, OTF2_REF_STRING }, { NULL, 0, 0 } };

static const rec_kind kinds[K_COUNT] = {
#define KIND_ROW(kind, code, cat) \
	[K_##kind] = { code, cat, fields_##kind, \
		       sizeof fields_##kind / sizeof fields_##kind[0] - 1 },
	RECORDS(KIND_ROW)
#undef KIND_ROW
	[K_Metric] = { "Metric", "metric", fields_Metric, 1 },
	[K_ProgramBegin] = { "ProgramBegin", "otf2", fields_ProgramBegin, 1 },
	[K_Unknown] = { "Unknown", "otf2", NULL, 0 },
};

/* ---- Packing (the callbacks) ------------------------------------------------------- */

/* Room for `slots` more slots; 0, or -1 (the batch failed: out of memory). */
static int reserve(otf2_batch *b, size_t slots)
{
	if (weft__array_grow((void **)&b->slots, &b->slot_cap, b->slot_count + slots,
			     sizeof *b->slots) < 0) {
		b->failed = 1;
		return -1;
	}
	return 0;
}

/* An attribute's value as a u64: zero- or sign-extended, floats as their bits. */
static uint64_t attribute_bits(OTF2_Type type, OTF2_AttributeValue v)
{
	switch (type) {
	case OTF2_TYPE_UINT8: return v.uint8;
	case OTF2_TYPE_UINT16: return v.uint16;
	case OTF2_TYPE_UINT32: return v.uint32;
	case OTF2_TYPE_UINT64: return v.uint64;
	case OTF2_TYPE_INT8: return (uint64_t)(int64_t)v.int8;
	case OTF2_TYPE_INT16: return (uint64_t)(int64_t)v.int16;
	case OTF2_TYPE_INT32: return (uint64_t)(int64_t)v.int32;
	case OTF2_TYPE_INT64: return (uint64_t)v.int64;
	case OTF2_TYPE_FLOAT: { uint32_t u; memcpy(&u, &v.float32, 4); return u; }
	case OTF2_TYPE_DOUBLE: { uint64_t u; memcpy(&u, &v.float64, 8); return u; }
	case OTF2_TYPE_LOCATION: return v.locationRef;
	default: return v.uint32; /* the other references are 32-bit */
	}
}

/* Appends the attribute list of a record (`u32 count`, 16-byte entries). */
static int pack_attributes(otf2_batch *b, OTF2_AttributeList *list)
{
	uint32_t n = list ? OTF2_AttributeList_GetNumberOfElements(list) : 0;
	if (n == 0)
		return 0;
	size_t need = 4 + (size_t)n * 16;
	if (weft__array_grow((void **)&b->attrs, &b->attr_cap, b->attr_size + need, 1) < 0) {
		b->failed = 1;
		return -1;
	}
	uint8_t *p = b->attrs + b->attr_size;
	uint32_t kept = 0;
	for (uint32_t i = 0; i < n; i++) {
		OTF2_AttributeRef ref;
		OTF2_Type type;
		OTF2_AttributeValue value;
		if (OTF2_AttributeList_GetAttributeByIndex(list, i, &ref, &type, &value) !=
		    OTF2_SUCCESS)
			continue;
		uint8_t *e = p + 4 + (size_t)kept++ * 16;
		uint64_t bits = attribute_bits(type, value);
		memset(e, 0, 16);
		memcpy(e, &ref, 4);
		e[4] = type;
		memcpy(e + 8, &bits, 8);
	}
	memcpy(p, &kept, 4);
	b->attr_size += 4 + (size_t)kept * 16;
	return 0;
}

/* Starts the event of a record in the batch; -1 when out of memory. */
static int begin(otf2_batch *b, int kind, OTF2_TimeStamp time, uint64_t position,
		 OTF2_AttributeList *attributes)
{
	if (b->failed)
		return -1;
	size_t need = b->count + 2;
	if (weft__array_grow((void **)&b->events, &b->cap, need, sizeof *b->events) < 0 ||
	    weft__array_grow((void **)&b->slot_at, &b->slot_at_cap, need, sizeof *b->slot_at) < 0 ||
	    weft__array_grow((void **)&b->attr_at, &b->attr_at_cap, need, sizeof *b->attr_at) < 0) {
		b->failed = 1;
		return -1;
	}
	weft_event *e = &b->events[b->count];
	memset(e, 0, sizeof *e);
	e->time = e->end = weft__otf2_ns(b->ot, time);
	e->offset = position;
	e->seq = position;
	e->stream = b->stream;
	e->code = kinds[kind].code;
	e->code_len = (uint32_t)strlen(kinds[kind].code);
	e->depth = -1;
	e->parent = -1;
	b->slot_at[b->count] = b->slot_count;
	b->attr_at[b->count] = b->attr_size;
	if (pack_attributes(b, attributes) < 0)
		return -1;
	b->count++;
	b->slot_at[b->count] = b->slot_count;
	b->attr_at[b->count] = b->attr_size;
	return reserve(b, kinds[kind].field_count);
}

/* One slot (the room was reserved by begin()). */
static void put(otf2_batch *b, uint64_t v)
{
	b->slots[b->slot_count++] = v;
	b->slot_at[b->count] = b->slot_count;
}

#define PARAM(t, n, name, ref) , t n
#define PUT(t, n, name, ref) put(b, (uint64_t)n);
#define CALLBACK(kind, code, cat) \
	static OTF2_CallbackCode on_##kind(OTF2_LocationRef location, OTF2_TimeStamp time, \
					   uint64_t position, void *data, \
					   OTF2_AttributeList *attributes F_##kind(PARAM)) \
	{ \
		otf2_batch *b = data; \
		(void)location; \
		if (begin(b, K_##kind, time, position, attributes) < 0) \
			return OTF2_CALLBACK_INTERRUPT; \
		F_##kind(PUT) \
		return OTF2_CALLBACK_SUCCESS; \
	}
RECORDS(CALLBACK)
#undef CALLBACK

/* Metric: metric, count, then (type, value) per member. */
static OTF2_CallbackCode on_Metric(OTF2_LocationRef location, OTF2_TimeStamp time,
				   uint64_t position, void *data, OTF2_AttributeList *attributes,
				   OTF2_MetricRef metric, uint8_t count, const OTF2_Type *types,
				   const OTF2_MetricValue *values)
{
	otf2_batch *b = data;
	(void)location;
	if (begin(b, K_Metric, time, position, attributes) < 0 || reserve(b, 2 + 2 * (size_t)count) < 0)
		return OTF2_CALLBACK_INTERRUPT;
	put(b, metric);
	put(b, count);
	for (uint8_t i = 0; i < count; i++) {
		put(b, types ? types[i] : OTF2_TYPE_UINT64);
		put(b, values ? values[i].unsigned_int : 0);
	}
	return OTF2_CALLBACK_SUCCESS;
}

/* ProgramBegin: program, count, then the argument strings. */
static OTF2_CallbackCode on_ProgramBegin(OTF2_LocationRef location, OTF2_TimeStamp time,
					 uint64_t position, void *data,
					 OTF2_AttributeList *attributes, OTF2_StringRef program,
					 uint32_t count, const OTF2_StringRef *arguments)
{
	otf2_batch *b = data;
	(void)location;
	if (arguments == NULL)
		count = 0;
	if (begin(b, K_ProgramBegin, time, position, attributes) < 0 ||
	    reserve(b, 2 + (size_t)count) < 0)
		return OTF2_CALLBACK_INTERRUPT;
	put(b, program);
	put(b, count);
	for (uint32_t i = 0; i < count; i++)
		put(b, arguments[i]);
	return OTF2_CALLBACK_SUCCESS;
}

/* A record of a later OTF2 version: kept as "Unknown", with its position. */
static OTF2_CallbackCode on_Unknown(OTF2_LocationRef location, OTF2_TimeStamp time,
				    uint64_t position, void *data,
				    OTF2_AttributeList *attributes)
{
	(void)location;
	return begin(data, K_Unknown, time, position, attributes) < 0
		       ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

OTF2_EvtReaderCallbacks *weft__otf2_event_callbacks(void)
{
	OTF2_EvtReaderCallbacks *c = OTF2_EvtReaderCallbacks_New();
	if (c == NULL)
		return NULL;
#define REGISTER(kind, code, cat) OTF2_EvtReaderCallbacks_Set##kind##Callback(c, on_##kind);
	RECORDS(REGISTER)
	REGISTER(Metric, "", "")
	REGISTER(ProgramBegin, "", "")
	REGISTER(Unknown, "", "")
#undef REGISTER
	return c;
}

void weft__otf2_batch_fix(otf2_batch *b)
{
	for (size_t i = 0; i < b->count; i++) {
		weft_event *e = &b->events[i];
		size_t s0 = b->slot_at[i], s1 = b->slot_at[i + 1];
		size_t a0 = b->attr_at[i], a1 = b->attr_at[i + 1];
		e->payload = s1 > s0 ? (const uint8_t *)(b->slots + s0) : NULL;
		e->payload_size = (uint32_t)((s1 - s0) * sizeof(uint64_t));
		e->data = a1 > a0 ? b->attrs + a0 : NULL;
		e->data_size = a1 - a0;
	}
}

/* ---- Fields --------------------------------------------------------------------- */

/* The kind of an event from its code: by address first (events of a cursor). */
static int kind_of(const weft_event *event)
{
	for (int k = 0; k < K_COUNT; k++)
		if (event->code == kinds[k].code)
			return k;
	for (int k = 0; k < K_COUNT; k++)
		if (strlen(kinds[k].code) == event->code_len &&
		    memcmp(kinds[k].code, event->code, event->code_len) == 0)
			return k;
	return -1;
}

/* Slot i of the payload (the payload is u64-aligned in the batch, not in copies). */
static uint64_t slot(const weft_event *event, size_t i)
{
	uint64_t v;
	memcpy(&v, event->payload + i * 8, 8);
	return v;
}

/* Appends a field when there is room; returns the new count. */
static int emit(weft_field *out, size_t cap, int n, const weft_field *f)
{
	if ((size_t)n < cap)
		out[n] = *f;
	return n + 1;
}

static weft_field number(const char *name, weft_type type, uint64_t v)
{
	weft_field f;
	memset(&f, 0, sizeof f);
	f.name = name;
	f.name_len = (uint32_t)strlen(name);
	f.type = type;
	f.v.u = v;
	return f;
}

static weft_field text(const char *name, const char *s)
{
	weft_field f = number(name, WEFT_TYPE_STR, 0);
	f.v.s.ptr = s ? s : "";
	f.v.s.len = s ? strlen(s) : 0;
	return f;
}

/* The name a reference field resolves to (NULL when unknown). */
static const char *resolve(const otf2_trace *ot, otf2_ref ref, uint64_t v)
{
	switch (ref) {
	case OTF2_REF_REGION: return weft__otf2_def_name(ot, OTF2_DEF_REGION, v);
	case OTF2_REF_STRING: return weft__otf2_string(ot, (uint32_t)v);
	case OTF2_REF_PARAMETER: return weft__otf2_def_name(ot, OTF2_DEF_PARAMETER, v);
	case OTF2_REF_COMM: return weft__otf2_def_name(ot, OTF2_DEF_COMM, v);
	case OTF2_REF_GROUP: return weft__otf2_def_name(ot, OTF2_DEF_GROUP, v);
	case OTF2_REF_RMA_WIN: return weft__otf2_def_name(ot, OTF2_DEF_RMA_WIN, v);
	case OTF2_REF_IO_HANDLE: return weft__otf2_def_name(ot, OTF2_DEF_IO_HANDLE, v);
	case OTF2_REF_IO_FILE: return weft__otf2_def_name(ot, OTF2_DEF_IO_FILE, v);
	default: return NULL;
	}
}

/* 1 for the references that read as a name with "<name>_ref" (Pallas's way). */
static int named_ref(otf2_ref ref)
{
	return ref == OTF2_REF_REGION || ref == OTF2_REF_STRING || ref == OTF2_REF_PARAMETER;
}

/* 1 for the references that read as a number with "<name>_name". */
static int numbered_ref(otf2_ref ref)
{
	return ref == OTF2_REF_COMM || ref == OTF2_REF_GROUP || ref == OTF2_REF_RMA_WIN ||
	       ref == OTF2_REF_IO_HANDLE || ref == OTF2_REF_IO_FILE;
}

/* The second field name of a reference field: "<name>_ref" or "<name>_name". */
static const char *suffixed(const char *name, otf2_ref ref)
{
	static const struct { const char *base, *ref_name, *name_name; } names[] = {
		{ "region", "region_ref", NULL }, { "value", "value_ref", NULL },
		{ "parameter", "parameter_ref", NULL }, { "program", "program_ref", NULL },
		{ "comm", NULL, "comm_name" }, { "team", NULL, "team_name" },
		{ "contingent", NULL, "contingent_name" }, { "group", NULL, "group_name" },
		{ "win", NULL, "win_name" }, { "handle", NULL, "handle_name" },
		{ "old_handle", NULL, "old_handle_name" },
		{ "new_handle", NULL, "new_handle_name" }, { "file", NULL, "file_name" },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(names[i].base, name) == 0)
			return numbered_ref(ref) ? names[i].name_name : names[i].ref_name;
	return NULL;
}

/*
 * The fields of one slot: a number; a named reference gives its name then
 * "<name>_ref" (as Pallas's region and region_ref); a communicator its
 * number then "<name>_name"; a time is converted to ns.
 */
static int slot_fields(const otf2_trace *ot, const rec_field *f, uint64_t v,
		       weft_field *out, size_t cap, int n)
{
	weft_field x;
	if (named_ref(f->ref)) {
		x = text(f->name, resolve(ot, f->ref, v));
		n = emit(out, cap, n, &x);
		x = number(suffixed(f->name, f->ref), WEFT_TYPE_U32, v);
		return emit(out, cap, n, &x);
	}
	if (numbered_ref(f->ref)) {
		x = number(f->name, WEFT_TYPE_U32, v);
		n = emit(out, cap, n, &x);
		x = text(suffixed(f->name, f->ref), resolve(ot, f->ref, v));
		return emit(out, cap, n, &x);
	}
	switch (f->ref) {
	case OTF2_REF_TIME:
		x = number(f->name, WEFT_TYPE_U64, weft__otf2_ns(ot, v));
		return emit(out, cap, n, &x);
	default:
		x = number(f->name, f->type, v); /* an int64_t's bits: v.i */
		return emit(out, cap, n, &x);
	}
}

/* The members of metric `ref` (an instance names its class). */
static const otf2_def *metric_class(const otf2_trace *ot, uint64_t ref)
{
	const otf2_def *d = weft__otf2_def_find(&ot->defs[OTF2_DEF_METRIC_CLASS], ref);
	if (d != NULL)
		return d;
	const otf2_def *inst = weft__otf2_def_find(&ot->defs[OTF2_DEF_METRIC_INSTANCE], ref);
	return inst ? weft__otf2_def_find(&ot->defs[OTF2_DEF_METRIC_CLASS], inst->v[0]) : NULL;
}

/* A metric value as a field named after its member, typed as recorded. */
static weft_field metric_value(const otf2_trace *ot, const otf2_def *cls, uint64_t i,
			       uint64_t type, uint64_t bits)
{
	const char *name = NULL;
	if (cls != NULL && i < cls->member_count)
		name = weft__otf2_def_name(ot, OTF2_DEF_METRIC_MEMBER, cls->members[i]);
	weft_field f = number(name ? name : "value", WEFT_TYPE_U64, bits);
	if (type == OTF2_TYPE_INT64) {
		f.type = WEFT_TYPE_I64;
	} else if (type == OTF2_TYPE_DOUBLE) {
		f.type = WEFT_TYPE_F64;
		memcpy(&f.v.f, &bits, 8);
	}
	return f;
}

/* Metric and ProgramBegin: their arrays after the first slot. */
static int array_fields(const otf2_trace *ot, int kind, const weft_event *event,
			weft_field *out, size_t cap, int n)
{
	size_t slots = event->payload_size / 8;
	uint64_t count = slot(event, 1);
	weft_field x = number("count", WEFT_TYPE_U32, count);
	n = emit(out, cap, n, &x);
	if (kind == K_Metric) {
		const otf2_def *cls = metric_class(ot, slot(event, 0));
		for (uint64_t i = 0; i < count && 3 + 2 * i < slots; i++) {
			x = metric_value(ot, cls, i, slot(event, 2 + 2 * i), slot(event, 3 + 2 * i));
			n = emit(out, cap, n, &x);
		}
		return n;
	}
	for (uint64_t i = 0; i < count && 2 + i < slots; i++) {
		x = text("argument", weft__otf2_string(ot, (uint32_t)slot(event, 2 + i)));
		n = emit(out, cap, n, &x);
	}
	return n;
}

/* An attribute value, typed by its OTF2 type; references as their names. */
static weft_field attribute_field(const otf2_trace *ot, const uint8_t *e)
{
	uint32_t ref;
	uint64_t bits;
	memcpy(&ref, e, 4);
	memcpy(&bits, e + 8, 8);
	const char *name = weft__otf2_def_name(ot, OTF2_DEF_ATTRIBUTE, ref);
	weft_field f = number(name ? name : "attribute", WEFT_TYPE_U64, bits);
	switch (e[4]) {
	case OTF2_TYPE_UINT8: f.type = WEFT_TYPE_U8; break;
	case OTF2_TYPE_UINT16: f.type = WEFT_TYPE_U16; break;
	case OTF2_TYPE_UINT32: f.type = WEFT_TYPE_U32; break;
	case OTF2_TYPE_INT8: f.type = WEFT_TYPE_I8; break;
	case OTF2_TYPE_INT16: f.type = WEFT_TYPE_I16; break;
	case OTF2_TYPE_INT32: f.type = WEFT_TYPE_I32; break;
	case OTF2_TYPE_INT64: f.type = WEFT_TYPE_I64; break;
	case OTF2_TYPE_FLOAT: {
		float x;
		uint32_t u = (uint32_t)bits;
		memcpy(&x, &u, 4);
		f.type = WEFT_TYPE_F32;
		f.v.f = x;
		break;
	}
	case OTF2_TYPE_DOUBLE: f.type = WEFT_TYPE_F64; memcpy(&f.v.f, &bits, 8); break;
	case OTF2_TYPE_STRING: {
		weft_field t = text(f.name, weft__otf2_string(ot, (uint32_t)bits));
		t.name_len = f.name_len;
		return t;
	}
	case OTF2_TYPE_REGION: {
		weft_field t = text(f.name, weft__otf2_def_name(ot, OTF2_DEF_REGION, bits));
		t.name_len = f.name_len;
		return t;
	}
	case OTF2_TYPE_UINT64: case OTF2_TYPE_LOCATION: break;
	default: f.type = WEFT_TYPE_U32; break;
	}
	return f;
}

/* The attributes of the event (weft_event.data), after its own fields. */
static int attribute_fields(const otf2_trace *ot, const weft_event *event,
			    weft_field *out, size_t cap, int n)
{
	if (event->data == NULL || event->data_size < 4)
		return n;
	uint32_t count;
	memcpy(&count, event->data, 4);
	if (count > (event->data_size - 4) / 16)
		return WEFT_EFORMAT;
	for (uint32_t i = 0; i < count; i++) {
		weft_field f = attribute_field(ot, event->data + 4 + (size_t)i * 16);
		n = emit(out, cap, n, &f);
	}
	return n;
}

int weft__otf2_event_fields(const weft_trace *trace, const weft_event *event,
			    weft_field *out, size_t cap)
{
	const otf2_trace *ot = trace->backend_data;
	int kind = kind_of(event);
	if (kind < 0)
		return 0;
	const rec_kind *k = &kinds[kind];
	size_t slots = event->payload_size / 8;
	if (slots < k->field_count)
		return WEFT_EFORMAT;
	int n = 0;
	for (uint32_t i = 0; i < k->field_count; i++)
		n = slot_fields(ot, &k->fields[i], slot(event, i), out, cap, n);
	if ((kind == K_Metric || kind == K_ProgramBegin) && slots >= 2)
		n = array_fields(ot, kind, event, out, cap, n);
	return attribute_fields(ot, event, out, cap, n);
}

/* ---- Classification ----------------------------------------------------------------- */

/* A paradigm as a category ("mpi", "openmp", ...), NULL for the generic ones. */
static const char *paradigm_category(uint32_t paradigm)
{
	switch (paradigm) {
	case OTF2_PARADIGM_MPI: return "mpi";
	case OTF2_PARADIGM_OPENMP: return "openmp";
	case OTF2_PARADIGM_PTHREAD: return "pthread";
	case OTF2_PARADIGM_CUDA: return "cuda";
	case OTF2_PARADIGM_OPENCL: return "opencl";
	case OTF2_PARADIGM_HIP: return "hip";
	case OTF2_PARADIGM_OPENACC: return "openacc";
	case OTF2_PARADIGM_SHMEM: return "shmem";
	case OTF2_PARADIGM_MEASUREMENT_SYSTEM: return "measurement";
	case OTF2_PARADIGM_KOKKOS: return "kokkos";
	case OTF2_PARADIGM_OMPSS: return "ompss";
	default: return NULL;
	}
}

/* The rank of world rank `world` in communicator `comm`, or -1. */
static int64_t comm_rank(const otf2_trace *ot, uint64_t comm, int64_t world)
{
	if (world < 0)
		return -1;
	size_t lo = 0, hi = ot->comm_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ot->comms[mid].comm < comm)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == ot->comm_count || ot->comms[lo].comm != comm)
		return world; /* an unknown communicator: as the world */
	const otf2_comm_ranks *c = &ot->comms[lo];
	if (c->identity)
		return world;
	size_t a = 0, b = c->count;
	uint64_t key = (uint64_t)world << 32;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (c->sorted[mid] < key)
			a = mid + 1;
		else
			b = mid;
	}
	if (a < c->count && c->sorted[a] >> 32 == (uint64_t)world)
		return (int64_t)(c->sorted[a] & 0xffffffffu);
	return -1;
}

/* A 64-bit mix of the four numbers that name a message channel. */
static uint64_t message_key(uint64_t from, uint64_t to, uint64_t tag, uint64_t comm)
{
	uint64_t h = (from << 32 | (to & 0xffffffffu)) * 0x9E3779B97F4A7C15ull;
	h ^= (tag << 32 | (comm & 0xffffffffu)) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
	return h * 0xC2B2AE3D27D4EB4Full;
}

/*
 * MPI point-to-point sends and receives are message ends: the n-th send
 * from rank A to rank B with a tag on a communicator meets the n-th
 * receive of B from A with that tag on it (ranks in the communicator:
 * OTF2 records the peer so). A stream's own rank comes from the MPI
 * locations group; without one, from its location group.
 */
static void classify_message(const otf2_trace *ot, const weft_event *event, int kind,
			     weft_event_class *out)
{
	int send = kind == K_MpiSend || kind == K_MpiIsend;
	if (event->stream >= ot->stream_count || event->payload_size < 32)
		return;
	const otf2_stream_ref *s = &ot->streams[event->stream];
	uint64_t peer = slot(event, 0), comm = slot(event, 1), tag = slot(event, 2);
	int64_t self = comm_rank(ot, comm, s->world_rank >= 0 ? s->world_rank
							      : (int64_t)s->group);
	if (self < 0)
		return;
	out->flow = send ? WEFT_FLOW_OUT : WEFT_FLOW_IN;
	out->flow_key = send ? message_key((uint64_t)self, peer, tag, comm)
			     : message_key(peer, (uint64_t)self, tag, comm);
}

static const char *const metric_skip[] = { "metric", "metric_ref", "count", NULL };

/*
 * weft_event_classify() for OTF2: Enter and Leave open and close the span
 * of their region (category: the region's paradigm), MPI sends and
 * receives are message ends, a Metric is a sample of its members; the
 * others are points of their kind's category.
 */
void weft__otf2_event_classify(const weft_trace *trace, const weft_event *event,
			       weft_event_class *out)
{
	const otf2_trace *ot = trace->backend_data;
	int kind = kind_of(event);
	if (kind < 0)
		return;
	out->category = kinds[kind].category;
	if (kind == K_MpiSend || kind == K_MpiIsend || kind == K_MpiRecv || kind == K_MpiIrecv) {
		classify_message(ot, event, kind, out);
		return;
	}
	if (kind == K_Metric) {
		out->role = WEFT_ROLE_SAMPLE;
		out->sample_skip = metric_skip;
		return;
	}
	if ((kind != K_Enter && kind != K_Leave) || event->payload_size < 8)
		return;
	uint64_t ref = slot(event, 0);
	out->role = kind == K_Enter ? WEFT_ROLE_ENTER : WEFT_ROLE_LEAVE;
	out->pair_key = ref;
	const otf2_def *r = weft__otf2_def_find(&ot->defs[OTF2_DEF_REGION], ref);
	if (r == NULL)
		return;
	out->name = weft__otf2_string(ot, r->name);
	const char *cat = paradigm_category(r->v[1]);
	if (cat != NULL)
		out->category = cat;
}

/* ---- Event kinds (weft/schema.h) ---------------------------------------------------- */

/*
 * One kind per record kind with the fields weft__otf2_event_fields()
 * gives (a named reference: its name and "<name>_ref"; a communicator:
 * its number and "<name>_name"); Metric and ProgramBegin end with their
 * array, every kind with its attributes (known per event). Built once,
 * shared, never freed.
 */
static weft_event_schema schemas[K_COUNT];
static weft_field_schema schema_fields[K_COUNT * 16];
static pthread_once_t schemas_once = PTHREAD_ONCE_INIT;

static void schemas_build(void)
{
	weft_field_schema *f = schema_fields;
	for (int k = 0; k < K_COUNT; k++) {
		const rec_kind *rk = &kinds[k];
		weft_event_schema *s = &schemas[k];
		*s = (weft_event_schema){ rk->code, 0,
			k == K_Enter ? WEFT_ROLE_ENTER : k == K_Leave ? WEFT_ROLE_LEAVE :
			k == K_Metric ? WEFT_ROLE_SAMPLE : WEFT_ROLE_POINT,
			rk->category, 0, 0, f, 1 };
		for (uint32_t i = 0; i < rk->field_count; i++) {
			const rec_field *rf = &rk->fields[i];
			if (named_ref(rf->ref)) {
				*f++ = (weft_field_schema){ rf->name, WEFT_TYPE_STR, 0, 1, 0 };
				*f++ = (weft_field_schema){ suffixed(rf->name, rf->ref),
							    WEFT_TYPE_U32, 0, 0, 0 };
			} else if (numbered_ref(rf->ref)) {
				*f++ = (weft_field_schema){ rf->name, WEFT_TYPE_U32, 0, 0, 0 };
				*f++ = (weft_field_schema){ suffixed(rf->name, rf->ref),
							    WEFT_TYPE_STR, 0, 1, 0 };
			} else {
				*f++ = (weft_field_schema){ rf->name,
					rf->ref == OTF2_REF_TIME ? WEFT_TYPE_U64 : rf->type, 0, 0, 0 };
			}
		}
		if (k == K_Metric || k == K_ProgramBegin)
			*f++ = (weft_field_schema){ "count", WEFT_TYPE_U32, 0, 0, 0 };
		s->field_count = (size_t)(f - s->fields);
	}
}

size_t weft__otf2_event_schemas(const weft_trace *trace, const weft_event_schema **out)
{
	(void)trace;
	pthread_once(&schemas_once, schemas_build);
	*out = schemas;
	return K_COUNT;
}
