/* SPDX-License-Identifier: MIT */
/*
 * tests/eztrace/otf2_api_writer.c - writes a small trace through the OTF2
 * writing API (tests/python/test_otf2_pallas.py): with Debian's libotf2
 * an OTF2 archive, with weft's OTF2 library on Pallas a Pallas trace. One
 * location, its regions, the OpenMP and thread records, an attribute
 * list, and one metric (which Pallas 0.20 has no record for).
 *
 * usage: otf2_api_writer DIR
 */
#include <otf2/otf2.h>
#include <stdio.h>

#define CHECK(call) do { \
	OTF2_ErrorCode e_ = (call); \
	if (e_ != OTF2_SUCCESS) { \
		fprintf(stderr, "%s: %s\n", #call, OTF2_Error_GetDescription(e_)); \
		return 1; \
	} \
} while (0)

static OTF2_FlushType pre_flush(void *data, OTF2_FileType type, OTF2_LocationRef loc,
				void *caller, bool final)
{
	(void)data; (void)type; (void)loc; (void)caller; (void)final;
	return OTF2_FLUSH;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	OTF2_Archive *a = OTF2_Archive_Open(argv[1], "traces", OTF2_FILEMODE_WRITE, 1 << 20,
					    4 << 20, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
	if (a == NULL)
		return 1;
	OTF2_FlushCallbacks flush = { pre_flush, NULL };
	CHECK(OTF2_Archive_SetFlushCallbacks(a, &flush, NULL));
	CHECK(OTF2_Archive_SetSerialCollectiveCallbacks(a));
	CHECK(OTF2_Archive_OpenEvtFiles(a));
	OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(a, 0);
	OTF2_AttributeList *list = OTF2_AttributeList_New();
	if (w == NULL || list == NULL)
		return 1;
	OTF2_AttributeValue v = { .uint64 = 42 };
	CHECK(OTF2_AttributeList_AddAttribute(list, 0, OTF2_TYPE_UINT64, v));
	CHECK(OTF2_EvtWriter_Enter(w, list, 1000, 0));
	CHECK(OTF2_EvtWriter_OmpFork(w, NULL, 1010, 4));
	CHECK(OTF2_EvtWriter_OmpAcquireLock(w, NULL, 1020, 7, 1));
	CHECK(OTF2_EvtWriter_OmpReleaseLock(w, NULL, 1030, 7, 1));
	CHECK(OTF2_EvtWriter_OmpTaskCreate(w, NULL, 1040, 99));
	CHECK(OTF2_EvtWriter_OmpTaskSwitch(w, NULL, 1050, 99));
	CHECK(OTF2_EvtWriter_OmpTaskComplete(w, NULL, 1060, 99));
	CHECK(OTF2_EvtWriter_OmpJoin(w, NULL, 1070));
	CHECK(OTF2_EvtWriter_ThreadFork(w, NULL, 1080, OTF2_PARADIGM_PTHREAD, 2));
	CHECK(OTF2_EvtWriter_ThreadJoin(w, NULL, 1090, OTF2_PARADIGM_PTHREAD));
	OTF2_Type type = OTF2_TYPE_UINT64;
	OTF2_MetricValue value = { .unsigned_int = 5 };
	CHECK(OTF2_EvtWriter_Metric(w, NULL, 1095, 0, 1, &type, &value));
	CHECK(OTF2_EvtWriter_Leave(w, NULL, 1100, 0));
	uint64_t events = 0;
	CHECK(OTF2_EvtWriter_GetNumberOfEvents(w, &events));
	CHECK(OTF2_Archive_CloseEvtWriter(a, w));
	CHECK(OTF2_Archive_CloseEvtFiles(a));
	CHECK(OTF2_Archive_OpenDefFiles(a));
	OTF2_DefWriter *d = OTF2_Archive_GetDefWriter(a, 0);
	if (d == NULL)
		return 1;
	CHECK(OTF2_Archive_CloseDefWriter(a, d));
	CHECK(OTF2_Archive_CloseDefFiles(a));
	OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(a);
	if (g == NULL)
		return 1;
	CHECK(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, 1000, 101,
							 OTF2_UNDEFINED_TIMESTAMP));
	CHECK(OTF2_GlobalDefWriter_WriteString(g, 0, "main"));
	CHECK(OTF2_GlobalDefWriter_WriteString(g, 1, "answer"));
	CHECK(OTF2_GlobalDefWriter_WriteString(g, 2, "process"));
	CHECK(OTF2_GlobalDefWriter_WriteString(g, 3, "thread 0"));
	CHECK(OTF2_GlobalDefWriter_WriteString(g, 4, "machine"));
	CHECK(OTF2_GlobalDefWriter_WriteString(g, 5, "counter"));
	CHECK(OTF2_GlobalDefWriter_WriteRegion(g, 0, 0, 0, 0, OTF2_REGION_ROLE_FUNCTION,
					       OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE,
					       OTF2_UNDEFINED_STRING, 0, 0));
	CHECK(OTF2_GlobalDefWriter_WriteAttribute(g, 0, 1, 1, OTF2_TYPE_UINT64));
	CHECK(OTF2_GlobalDefWriter_WriteMetricMember(g, 0, 5, 5, OTF2_METRIC_TYPE_OTHER,
						     OTF2_METRIC_ABSOLUTE_POINT, OTF2_TYPE_UINT64,
						     OTF2_BASE_DECIMAL, 0, 5));
	OTF2_MetricMemberRef member = 0;
	CHECK(OTF2_GlobalDefWriter_WriteMetricClass(g, 0, 1, &member,
						    OTF2_METRIC_SYNCHRONOUS_STRICT,
						    OTF2_RECORDER_KIND_CPU));
	CHECK(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, 4, 4,
						       OTF2_UNDEFINED_SYSTEM_TREE_NODE));
	CHECK(OTF2_GlobalDefWriter_WriteLocationGroup(g, 0, 2, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
						      OTF2_UNDEFINED_LOCATION_GROUP));
	CHECK(OTF2_GlobalDefWriter_WriteLocation(g, 0, 3, OTF2_LOCATION_TYPE_CPU_THREAD, events,
						 0));
	CHECK(OTF2_Archive_CloseGlobalDefWriter(a, g));
	OTF2_AttributeList_Delete(list);
	CHECK(OTF2_Archive_Close(a));
	return 0;
}
