/* SPDX-License-Identifier: MIT */
/*
 * otf2_make_trace - writes an OTF2 archive with Debian's libotf2, for the
 * OTF2 reader's tests and benchmarks (tests/python/test_otf2_*.py,
 * bench/otf2_bench.sh).
 *
 *   otf2_make_trace DIR [--ranks R] [--threads T] [--iterations N]
 *                       [--duplicate-group] [--resolution HZ]
 *
 * DIR/traces.otf2 is an MPI+threads run of R ranks (processes, two per
 * node of a machine) of T threads each: every location enters "main",
 * and for each of N iterations enters "compute", and so on. The first
 * iteration writes one record of every event kind libotf2 3.0 has, with
 * attributes of every type on some; the others write enter/leave pairs,
 * a send/receive ring between ranks, an Allreduce and a metric, so that
 * a large N gives a large, realistic trace. --duplicate-group defines
 * group 0 twice, as EZTrace 2.0 does. Timestamps are in ticks of
 * --resolution (default 1 GHz).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <otf2/otf2.h>

/* The OpenMP records (OmpFork...) are deprecated in OTF2 3.0 but still
 * written by older tools: the trace must have them. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

enum { S_EMPTY, S_MACHINE, S_NODE, S_RANK, S_THREAD, S_MAIN, S_COMPUTE, S_SEND,
       S_RECV, S_ALLREDUCE, S_WORLD, S_LOCS, S_RANKS, S_ATTR_U, S_ATTR_I,
       S_ATTR_F, S_ATTR_S, S_ATTR_R, S_PARAM_I, S_PARAM_S, S_VALUE, S_METRIC,
       S_UNIT, S_FILE, S_SOURCE, S_WIN, S_IO, S_HANDLE, S_SAMPLER, S_PROGRAM,
       S_ARG, S_TEAM, S_DESC, S_MPI, S_STRING_COUNT };

static const char *const strings[S_STRING_COUNT] = {
	"", "machine", "node", "MPI Rank", "thread", "main", "compute", "MPI_Send",
	"MPI_Recv", "MPI_Allreduce", "MPI_COMM_WORLD", "MPI locations", "MPI ranks",
	"bytes", "delta", "ratio", "label", "region attr", "depth", "mode", "fast",
	"PAPI_TOT_INS", "#", "main.c", "src/main.c", "window", "POSIX I/O", "out.txt",
	"sampler", "./app", "--fast", "team", "a weft test trace", "MPI",
};

enum { R_MAIN, R_COMPUTE, R_SEND, R_RECV, R_ALLREDUCE };
enum { A_U, A_I, A_F, A_S, A_R };

static OTF2_FlushType pre_flush(void *data, OTF2_FileType type, OTF2_LocationRef loc,
				void *callerData, bool final)
{
	(void)data; (void)type; (void)loc; (void)callerData; (void)final;
	return OTF2_FLUSH;
}

static OTF2_TimeStamp post_flush(void *data, OTF2_FileType type, OTF2_LocationRef loc)
{
	(void)data; (void)type; (void)loc;
	return 0;
}

static OTF2_FlushCallbacks flush_callbacks = { pre_flush, post_flush };

typedef struct opts {
	const char *dir;
	uint32_t ranks, threads;
	uint64_t iterations, resolution;
	int duplicate_group;
} opts;

static void die(const char *what)
{
	fprintf(stderr, "otf2_make_trace: %s failed\n", what);
	exit(1);
}

#define OK(call) do { if ((call) != OTF2_SUCCESS) die(#call); } while (0)

static OTF2_AttributeList *attributes_all(OTF2_AttributeList *l)
{
	OTF2_AttributeValue v;
	v.uint64 = 42;
	OK(OTF2_AttributeList_AddAttribute(l, A_U, OTF2_TYPE_UINT64, v));
	OK(OTF2_AttributeList_AddInt32(l, A_I, -7));
	OK(OTF2_AttributeList_AddDouble(l, A_F, 0.25));
	OK(OTF2_AttributeList_AddStringRef(l, A_S, S_VALUE));
	OK(OTF2_AttributeList_AddRegionRef(l, A_R, R_COMPUTE));
	return l;
}

/* One record of every kind, on the first thread of a rank at time *t. */
static void every_kind(OTF2_EvtWriter *w, OTF2_AttributeList *al, uint32_t rank,
		       uint32_t ranks, uint64_t *t)
{
	uint32_t peer = (rank + 1) % ranks, from = (rank + ranks - 1) % ranks;
	OTF2_StringRef args[1] = { S_ARG };
	OTF2_Type types[2] = { OTF2_TYPE_UINT64, OTF2_TYPE_DOUBLE };
	OTF2_MetricValue values[2];
	values[0].unsigned_int = 1000 + rank;
	values[1].floating_point = 1.5;
	OK(OTF2_EvtWriter_ProgramBegin(w, NULL, ++*t, S_PROGRAM, 1, args));
	OK(OTF2_EvtWriter_MeasurementOnOff(w, NULL, ++*t, OTF2_MEASUREMENT_ON));
	OK(OTF2_EvtWriter_Enter(w, attributes_all(al), ++*t, R_SEND));
	OK(OTF2_EvtWriter_MpiSend(w, NULL, ++*t, peer, 0, 7, 64));
	OK(OTF2_EvtWriter_Leave(w, NULL, ++*t, R_SEND));
	OK(OTF2_EvtWriter_Enter(w, NULL, ++*t, R_RECV));
	OK(OTF2_EvtWriter_MpiRecv(w, NULL, ++*t, from, 0, 7, 64));
	OK(OTF2_EvtWriter_Leave(w, NULL, ++*t, R_RECV));
	OK(OTF2_EvtWriter_MpiIsend(w, NULL, ++*t, peer, 0, 8, 128, 100 + rank));
	OK(OTF2_EvtWriter_MpiIrecvRequest(w, NULL, ++*t, 200 + rank));
	OK(OTF2_EvtWriter_MpiRequestTest(w, NULL, ++*t, 100 + rank));
	OK(OTF2_EvtWriter_MpiIsendComplete(w, NULL, ++*t, 100 + rank));
	OK(OTF2_EvtWriter_MpiIrecv(w, NULL, ++*t, from, 0, 8, 128, 200 + rank));
	OK(OTF2_EvtWriter_MpiRequestCancelled(w, NULL, ++*t, 300 + rank));
	OK(OTF2_EvtWriter_MpiCollectiveBegin(w, NULL, ++*t));
	OK(OTF2_EvtWriter_MpiCollectiveEnd(w, NULL, ++*t, OTF2_COLLECTIVE_OP_BCAST, 0, 0,
					   rank == 0 ? 32 : 0, 32));
	OK(OTF2_EvtWriter_NonBlockingCollectiveRequest(w, NULL, ++*t, 400 + rank));
	OK(OTF2_EvtWriter_NonBlockingCollectiveComplete(w, NULL, ++*t,
		OTF2_COLLECTIVE_OP_ALLREDUCE, 0, OTF2_UNDEFINED_UINT32, 8, 8, 400 + rank));
	OK(OTF2_EvtWriter_CommCreate(w, NULL, ++*t, 0));
	OK(OTF2_EvtWriter_CommDestroy(w, NULL, ++*t, 0));
	OK(OTF2_EvtWriter_OmpFork(w, NULL, ++*t, 4));
	OK(OTF2_EvtWriter_OmpAcquireLock(w, NULL, ++*t, 5, 1));
	OK(OTF2_EvtWriter_OmpReleaseLock(w, NULL, ++*t, 5, 1));
	OK(OTF2_EvtWriter_OmpTaskCreate(w, NULL, ++*t, 77));
	OK(OTF2_EvtWriter_OmpTaskSwitch(w, NULL, ++*t, 77));
	OK(OTF2_EvtWriter_OmpTaskComplete(w, NULL, ++*t, 77));
	OK(OTF2_EvtWriter_OmpJoin(w, NULL, ++*t));
	OK(OTF2_EvtWriter_Metric(w, NULL, ++*t, 0, 2, types, values));
	OK(OTF2_EvtWriter_ParameterString(w, NULL, ++*t, 1, S_VALUE));
	OK(OTF2_EvtWriter_ParameterInt(w, NULL, ++*t, 0, -3));
	OK(OTF2_EvtWriter_ParameterUnsignedInt(w, NULL, ++*t, 0, 3));
	OK(OTF2_EvtWriter_ThreadFork(w, NULL, ++*t, OTF2_PARADIGM_PTHREAD, 2));
	OK(OTF2_EvtWriter_ThreadTeamBegin(w, NULL, ++*t, 1));
	OK(OTF2_EvtWriter_ThreadAcquireLock(w, NULL, ++*t, OTF2_PARADIGM_PTHREAD, 9, 1));
	OK(OTF2_EvtWriter_ThreadReleaseLock(w, NULL, ++*t, OTF2_PARADIGM_PTHREAD, 9, 1));
	OK(OTF2_EvtWriter_ThreadTaskCreate(w, NULL, ++*t, 1, 0, 1));
	OK(OTF2_EvtWriter_ThreadTaskSwitch(w, NULL, ++*t, 1, 0, 1));
	OK(OTF2_EvtWriter_ThreadTaskComplete(w, NULL, ++*t, 1, 0, 1));
	OK(OTF2_EvtWriter_ThreadCreate(w, NULL, ++*t, 1, 1));
	OK(OTF2_EvtWriter_ThreadBegin(w, NULL, ++*t, 1, 1));
	OK(OTF2_EvtWriter_ThreadWait(w, NULL, ++*t, 1, 1));
	OK(OTF2_EvtWriter_ThreadEnd(w, NULL, ++*t, 1, 1));
	OK(OTF2_EvtWriter_ThreadTeamEnd(w, NULL, ++*t, 1));
	OK(OTF2_EvtWriter_ThreadJoin(w, NULL, ++*t, OTF2_PARADIGM_PTHREAD));
	OK(OTF2_EvtWriter_RmaWinCreate(w, NULL, ++*t, 0));
	OK(OTF2_EvtWriter_RmaCollectiveBegin(w, NULL, ++*t));
	OK(OTF2_EvtWriter_RmaCollectiveEnd(w, NULL, ++*t, OTF2_COLLECTIVE_OP_BARRIER,
					   OTF2_RMA_SYNC_LEVEL_MEMORY, 0, 0, 0, 0));
	OK(OTF2_EvtWriter_RmaGroupSync(w, NULL, ++*t, OTF2_RMA_SYNC_LEVEL_PROCESS, 0, 1));
	OK(OTF2_EvtWriter_RmaRequestLock(w, NULL, ++*t, 0, peer, 3, OTF2_LOCK_EXCLUSIVE));
	OK(OTF2_EvtWriter_RmaAcquireLock(w, NULL, ++*t, 0, peer, 3, OTF2_LOCK_EXCLUSIVE));
	OK(OTF2_EvtWriter_RmaTryLock(w, NULL, ++*t, 0, peer, 3, OTF2_LOCK_SHARED));
	OK(OTF2_EvtWriter_RmaReleaseLock(w, NULL, ++*t, 0, peer, 3));
	OK(OTF2_EvtWriter_RmaSync(w, NULL, ++*t, 0, peer, OTF2_RMA_SYNC_TYPE_MEMORY));
	OK(OTF2_EvtWriter_RmaWaitChange(w, NULL, ++*t, 0));
	OK(OTF2_EvtWriter_RmaPut(w, NULL, ++*t, 0, peer, 16, 1));
	OK(OTF2_EvtWriter_RmaGet(w, NULL, ++*t, 0, peer, 16, 2));
	OK(OTF2_EvtWriter_RmaAtomic(w, NULL, ++*t, 0, peer, OTF2_RMA_ATOMIC_TYPE_ACCUMULATE,
				    8, 0, 3));
	OK(OTF2_EvtWriter_RmaOpCompleteBlocking(w, NULL, ++*t, 0, 1));
	OK(OTF2_EvtWriter_RmaOpCompleteNonBlocking(w, NULL, ++*t, 0, 2));
	OK(OTF2_EvtWriter_RmaOpTest(w, NULL, ++*t, 0, 3));
	OK(OTF2_EvtWriter_RmaOpCompleteRemote(w, NULL, ++*t, 0, 3));
	OK(OTF2_EvtWriter_RmaWinDestroy(w, NULL, ++*t, 0));
	OK(OTF2_EvtWriter_CallingContextEnter(w, NULL, ++*t, 0, 1));
	OK(OTF2_EvtWriter_CallingContextSample(w, NULL, ++*t, 0, 1, 0));
	OK(OTF2_EvtWriter_CallingContextLeave(w, NULL, ++*t, 0));
	OK(OTF2_EvtWriter_IoCreateHandle(w, NULL, ++*t, 0, OTF2_IO_ACCESS_MODE_WRITE_ONLY,
					 OTF2_IO_CREATION_FLAG_CREATE, OTF2_IO_STATUS_FLAG_APPEND));
	OK(OTF2_EvtWriter_IoDuplicateHandle(w, NULL, ++*t, 0, 1, OTF2_IO_STATUS_FLAG_NONE));
	OK(OTF2_EvtWriter_IoSeek(w, NULL, ++*t, 0, -4, OTF2_IO_SEEK_FROM_END, 60));
	OK(OTF2_EvtWriter_IoChangeStatusFlags(w, NULL, ++*t, 0, OTF2_IO_STATUS_FLAG_SYNC));
	OK(OTF2_EvtWriter_IoOperationBegin(w, NULL, ++*t, 0, OTF2_IO_OPERATION_MODE_WRITE,
					   OTF2_IO_OPERATION_FLAG_NONE, 512, 11));
	OK(OTF2_EvtWriter_IoOperationTest(w, NULL, ++*t, 0, 11));
	OK(OTF2_EvtWriter_IoOperationIssued(w, NULL, ++*t, 0, 11));
	OK(OTF2_EvtWriter_IoOperationComplete(w, NULL, ++*t, 0, 500, 11));
	OK(OTF2_EvtWriter_IoOperationCancelled(w, NULL, ++*t, 0, 12));
	OK(OTF2_EvtWriter_IoAcquireLock(w, NULL, ++*t, 0, OTF2_LOCK_EXCLUSIVE));
	OK(OTF2_EvtWriter_IoTryLock(w, NULL, ++*t, 0, OTF2_LOCK_SHARED));
	OK(OTF2_EvtWriter_IoReleaseLock(w, NULL, ++*t, 0, OTF2_LOCK_EXCLUSIVE));
	OK(OTF2_EvtWriter_IoDestroyHandle(w, NULL, ++*t, 1));
	OK(OTF2_EvtWriter_IoDeleteFile(w, NULL, ++*t, 0, 0));
	*t += 2;
	OK(OTF2_EvtWriter_BufferFlush(w, NULL, *t - 1, *t));
}

/* The events of one location: thread `th` of rank `rank`. */
static uint64_t write_location(OTF2_Archive *ar, const opts *o, uint32_t rank, uint32_t th)
{
	OTF2_LocationRef loc = (OTF2_LocationRef)rank * o->threads + th;
	OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(ar, loc);
	OTF2_AttributeList *al = OTF2_AttributeList_New();
	if (w == NULL || al == NULL)
		die("OTF2_Archive_GetEvtWriter");
	uint64_t t = 1000 + rank * 3 + th; /* every location starts apart */
	uint32_t peer = (rank + 1) % o->ranks, from = (rank + o->ranks - 1) % o->ranks;
	OTF2_Type type = OTF2_TYPE_UINT64;
	OTF2_MetricValue value;
	OK(OTF2_EvtWriter_Enter(w, NULL, t, R_MAIN));
	for (uint64_t i = 0; i < o->iterations; i++) {
		if (i == 0 && th == 0)
			every_kind(w, al, rank, o->ranks, &t);
		t += 10;
		OK(OTF2_EvtWriter_Enter(w, i == 0 ? attributes_all(al) : NULL, t, R_COMPUTE));
		value.unsigned_int = i * 1000 + rank;
		OK(OTF2_EvtWriter_Metric(w, NULL, t + 1, 1, 1, &type, &value));
		OK(OTF2_EvtWriter_Leave(w, NULL, t + 50, R_COMPUTE));
		t += 60;
		if (th != 0)
			continue;
		OK(OTF2_EvtWriter_Enter(w, NULL, t, R_SEND));
		OK(OTF2_EvtWriter_MpiSend(w, NULL, t + 1, peer, 0, 1, 1024));
		OK(OTF2_EvtWriter_Leave(w, NULL, t + 5, R_SEND));
		OK(OTF2_EvtWriter_Enter(w, NULL, t + 10, R_RECV));
		OK(OTF2_EvtWriter_MpiRecv(w, NULL, t + 20, from, 0, 1, 1024));
		OK(OTF2_EvtWriter_Leave(w, NULL, t + 21, R_RECV));
		OK(OTF2_EvtWriter_Enter(w, NULL, t + 30, R_ALLREDUCE));
		OK(OTF2_EvtWriter_MpiCollectiveBegin(w, NULL, t + 31));
		OK(OTF2_EvtWriter_MpiCollectiveEnd(w, NULL, t + 40, OTF2_COLLECTIVE_OP_ALLREDUCE,
						   0, OTF2_UNDEFINED_UINT32, 8, 8));
		OK(OTF2_EvtWriter_Leave(w, NULL, t + 41, R_ALLREDUCE));
		t += 50;
	}
	OK(OTF2_EvtWriter_Leave(w, NULL, t + 10, R_MAIN));
	if (th == 0)
		OK(OTF2_EvtWriter_ProgramEnd(w, NULL, t + 11, 0));
	uint64_t n = 0;
	OK(OTF2_EvtWriter_GetNumberOfEvents(w, &n));
	OTF2_AttributeList_Delete(al);
	OK(OTF2_Archive_CloseEvtWriter(ar, w));
	return t + 20;
}

/* The global definitions: strings, the system tree, ranks and threads, ... */
static void write_definitions(OTF2_Archive *ar, const opts *o, uint64_t end)
{
	OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(ar);
	if (g == NULL)
		die("OTF2_Archive_GetGlobalDefWriter");
	OK(OTF2_GlobalDefWriter_WriteClockProperties(g, o->resolution, 1000, end - 1000,
						     OTF2_UNDEFINED_TIMESTAMP));
	uint32_t nstr = S_STRING_COUNT;
	for (uint32_t s = 0; s < S_STRING_COUNT; s++)
		OK(OTF2_GlobalDefWriter_WriteString(g, s, strings[s]));
	OK(OTF2_GlobalDefWriter_WriteParadigm(g, OTF2_PARADIGM_MPI, S_MPI,
					      OTF2_PARADIGM_CLASS_PROCESS));
	OK(OTF2_GlobalDefWriter_WriteAttribute(g, A_U, S_ATTR_U, S_EMPTY, OTF2_TYPE_UINT64));
	OK(OTF2_GlobalDefWriter_WriteAttribute(g, A_I, S_ATTR_I, S_EMPTY, OTF2_TYPE_INT32));
	OK(OTF2_GlobalDefWriter_WriteAttribute(g, A_F, S_ATTR_F, S_EMPTY, OTF2_TYPE_DOUBLE));
	OK(OTF2_GlobalDefWriter_WriteAttribute(g, A_S, S_ATTR_S, S_EMPTY, OTF2_TYPE_STRING));
	OK(OTF2_GlobalDefWriter_WriteAttribute(g, A_R, S_ATTR_R, S_EMPTY, OTF2_TYPE_REGION));
	OK(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, S_MACHINE, S_MACHINE,
						    OTF2_UNDEFINED_SYSTEM_TREE_NODE));
	uint32_t nodes = (o->ranks + 1) / 2;
	for (uint32_t n = 0; n < nodes; n++) {
		char name[32];
		snprintf(name, sizeof name, "node%u", n);
		OK(OTF2_GlobalDefWriter_WriteString(g, nstr, name));
		OK(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 1 + n, nstr++, S_NODE, 0));
	}
	uint64_t *locs = calloc(o->ranks, sizeof *locs);
	uint64_t *ranks = calloc(o->ranks, sizeof *ranks);
	if (locs == NULL || ranks == NULL)
		die("calloc");
	for (uint32_t r = 0; r < o->ranks; r++) {
		char name[32];
		snprintf(name, sizeof name, "MPI Rank %u", r);
		OK(OTF2_GlobalDefWriter_WriteString(g, nstr, name));
		OK(OTF2_GlobalDefWriter_WriteLocationGroup(g, r, nstr++,
			OTF2_LOCATION_GROUP_TYPE_PROCESS, 1 + r / 2,
			OTF2_UNDEFINED_LOCATION_GROUP));
		for (uint32_t th = 0; th < o->threads; th++) {
			snprintf(name, sizeof name, "thread %u:%u", r, th);
			OK(OTF2_GlobalDefWriter_WriteString(g, nstr, name));
			OK(OTF2_GlobalDefWriter_WriteLocation(g, (uint64_t)r * o->threads + th,
				nstr++, OTF2_LOCATION_TYPE_CPU_THREAD, 0, r));
		}
		locs[r] = (uint64_t)r * o->threads;
		ranks[r] = r;
	}
	OK(OTF2_GlobalDefWriter_WriteSourceCodeLocation(g, 0, S_SOURCE, 12));
	static const struct { uint32_t name; OTF2_RegionRole role; OTF2_Paradigm p; } regions[] = {
		{ S_MAIN, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER },
		{ S_COMPUTE, OTF2_REGION_ROLE_LOOP, OTF2_PARADIGM_COMPILER },
		{ S_SEND, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI },
		{ S_RECV, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI },
		{ S_ALLREDUCE, OTF2_REGION_ROLE_COLL_ALL2ALL, OTF2_PARADIGM_MPI },
	};
	for (uint32_t i = 0; i < sizeof regions / sizeof regions[0]; i++)
		OK(OTF2_GlobalDefWriter_WriteRegion(g, i, regions[i].name, regions[i].name,
			S_EMPTY, regions[i].role, regions[i].p, OTF2_REGION_FLAG_NONE,
			S_FILE, 10 + i, 20 + i));
	OK(OTF2_GlobalDefWriter_WriteGroup(g, 0, S_LOCS, OTF2_GROUP_TYPE_COMM_LOCATIONS,
		OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, o->ranks, locs));
	if (o->duplicate_group)
		OK(OTF2_GlobalDefWriter_WriteGroup(g, 0, S_LOCS, OTF2_GROUP_TYPE_COMM_LOCATIONS,
			OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, o->ranks, locs));
	OK(OTF2_GlobalDefWriter_WriteGroup(g, 1, S_RANKS, OTF2_GROUP_TYPE_COMM_GROUP,
		OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, o->ranks, ranks));
	OK(OTF2_GlobalDefWriter_WriteComm(g, 0, S_WORLD, 1, OTF2_UNDEFINED_COMM,
					  OTF2_COMM_FLAG_NONE));
	OK(OTF2_GlobalDefWriter_WriteComm(g, 1, S_TEAM, 1, OTF2_UNDEFINED_COMM,
					  OTF2_COMM_FLAG_NONE));
	OTF2_MetricMemberRef members[2] = { 0, 1 };
	OK(OTF2_GlobalDefWriter_WriteMetricMember(g, 0, S_METRIC, S_EMPTY,
		OTF2_METRIC_TYPE_PAPI, OTF2_METRIC_ACCUMULATED_START, OTF2_TYPE_UINT64,
		OTF2_BASE_DECIMAL, 0, S_UNIT));
	OK(OTF2_GlobalDefWriter_WriteMetricMember(g, 1, S_ATTR_F, S_EMPTY,
		OTF2_METRIC_TYPE_USER, OTF2_METRIC_ABSOLUTE_POINT, OTF2_TYPE_DOUBLE,
		OTF2_BASE_DECIMAL, 0, S_UNIT));
	OK(OTF2_GlobalDefWriter_WriteMetricClass(g, 0, 2, members,
		OTF2_METRIC_SYNCHRONOUS_STRICT, OTF2_RECORDER_KIND_CPU));
	OK(OTF2_GlobalDefWriter_WriteMetricClass(g, 1, 1, members,
		OTF2_METRIC_SYNCHRONOUS_STRICT, OTF2_RECORDER_KIND_CPU));
	OK(OTF2_GlobalDefWriter_WriteParameter(g, 0, S_PARAM_I, OTF2_PARAMETER_TYPE_INT64));
	OK(OTF2_GlobalDefWriter_WriteParameter(g, 1, S_PARAM_S, OTF2_PARAMETER_TYPE_STRING));
	OK(OTF2_GlobalDefWriter_WriteRmaWin(g, 0, S_WIN, 0, OTF2_RMA_WIN_FLAG_NONE));
	OK(OTF2_GlobalDefWriter_WriteCallingContext(g, 0, R_MAIN, 0,
						    OTF2_UNDEFINED_CALLING_CONTEXT));
	OK(OTF2_GlobalDefWriter_WriteInterruptGenerator(g, 0, S_SAMPLER,
		OTF2_INTERRUPT_GENERATOR_MODE_TIME, OTF2_BASE_DECIMAL, -6, 100));
	OK(OTF2_GlobalDefWriter_WriteIoParadigm(g, 0, S_IO, S_IO, OTF2_IO_PARADIGM_CLASS_SERIAL,
		OTF2_IO_PARADIGM_FLAG_OS, 0, NULL, NULL, NULL));
	OK(OTF2_GlobalDefWriter_WriteIoRegularFile(g, 0, S_HANDLE, 0));
	OK(OTF2_GlobalDefWriter_WriteIoHandle(g, 0, S_HANDLE, 0, 0, OTF2_IO_HANDLE_FLAG_NONE,
		OTF2_UNDEFINED_COMM, OTF2_UNDEFINED_IO_HANDLE));
	OK(OTF2_GlobalDefWriter_WriteIoHandle(g, 1, S_HANDLE, 0, 0, OTF2_IO_HANDLE_FLAG_NONE,
		OTF2_UNDEFINED_COMM, 0));
	free(locs);
	free(ranks);
	OK(OTF2_Archive_CloseGlobalDefWriter(ar, g));
}

static uint64_t number(const char *s, const char *what)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*s == '\0' || *end != '\0') {
		fprintf(stderr, "otf2_make_trace: %s: not a number: %s\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	opts o = { NULL, 4, 2, 3, 1000000000u, 0 };
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc)
			o.ranks = (uint32_t)number(argv[++i], "--ranks");
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			o.threads = (uint32_t)number(argv[++i], "--threads");
		else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
			o.iterations = number(argv[++i], "--iterations");
		else if (strcmp(argv[i], "--resolution") == 0 && i + 1 < argc)
			o.resolution = number(argv[++i], "--resolution");
		else if (strcmp(argv[i], "--duplicate-group") == 0)
			o.duplicate_group = 1;
		else if (o.dir == NULL && argv[i][0] != '-')
			o.dir = argv[i];
		else {
			fprintf(stderr, "usage: otf2_make_trace DIR [--ranks R] [--threads T] "
					"[--iterations N] [--duplicate-group] [--resolution HZ]\n");
			return 2;
		}
	}
	if (o.dir == NULL || o.ranks == 0 || o.threads == 0 || o.resolution == 0) {
		fprintf(stderr, "otf2_make_trace: a directory, ranks, threads and a "
				"resolution above 0 are needed\n");
		return 2;
	}
	OTF2_Archive *ar = OTF2_Archive_Open(o.dir, "traces", OTF2_FILEMODE_WRITE,
					     1024 * 1024, 4 * 1024 * 1024,
					     OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
	if (ar == NULL)
		die("OTF2_Archive_Open");
	OK(OTF2_Archive_SetFlushCallbacks(ar, &flush_callbacks, NULL));
	OK(OTF2_Archive_SetSerialCollectiveCallbacks(ar));
	OK(OTF2_Archive_SetDescription(ar, strings[S_DESC]));
	OK(OTF2_Archive_SetCreator(ar, "otf2_make_trace (weft tests)"));
	OK(OTF2_Archive_OpenEvtFiles(ar));
	uint64_t end = 0;
	for (uint32_t r = 0; r < o.ranks; r++)
		for (uint32_t th = 0; th < o.threads; th++) {
			uint64_t e = write_location(ar, &o, r, th);
			if (e > end)
				end = e;
		}
	OK(OTF2_Archive_CloseEvtFiles(ar));
	/* An empty local definition file per location, as Score-P writes:
	 * readers look for one. */
	OK(OTF2_Archive_OpenDefFiles(ar));
	for (uint64_t loc = 0; loc < (uint64_t)o.ranks * o.threads; loc++) {
		OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(ar, loc);
		if (dw == NULL)
			die("OTF2_Archive_GetDefWriter");
		OK(OTF2_Archive_CloseDefWriter(ar, dw));
	}
	OK(OTF2_Archive_CloseDefFiles(ar));
	write_definitions(ar, &o, end);
	OK(OTF2_Archive_Close(ar));
	return 0;
}
