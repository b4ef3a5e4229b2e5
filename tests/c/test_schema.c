/* SPDX-License-Identifier: MIT */
/*
 * test_schema.c - the event kinds of a trace (weft/schema.h), per
 * format: listed when the trace is opened, and the fields every event
 * of the trace decodes into are its kind's (names, types, order); the
 * ROSS table (weft_ross_table_write) takes its columns from them.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft/weft.h"
#include "testutil.h"

/* Opens tests/data/<rel>, with ross.model_schema when `schema` is given. */
static weft_trace *open_data(const char *rel, const char *schema)
{
	return tu_open_data(rel, 0, schema ? "ross.model_schema" : NULL, schema);
}

/* 1 when field `f` is the schema field `s` (name and type). */
static int field_matches(const weft_field *f, const weft_field_schema *s)
{
	return f->name_len == strlen(s->name) && memcmp(f->name, s->name, f->name_len) == 0 &&
	       f->type == s->type && f->is_array == s->is_array;
}

/*
 * Every event of `t` has a kind whose fields its own fields follow (a
 * variable field may be absent; fields past the list only for a kind with
 * variable_fields); returns the number of events checked, and *unlisted
 * those of no kind.
 */
static uint64_t check_events_follow_kinds(weft_trace *t, uint64_t *unlisted)
{
	weft_cursor *c;
	const weft_event *ev;
	weft_field fields[400];
	uint64_t n = 0;

	*unlisted = 0;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1) {
		const weft_event_schema *k =
			weft_trace_event_schema_find(t, ev->code, ev->code_len, ev->payload_size);
		int m = weft_event_fields(t, ev, fields, 400);
		n++;
		if (k == NULL) {
			(*unlisted)++;
			continue;
		}
		REQUIRE(m >= 0 && m <= 400);
		size_t j = 0;
		for (int i = 0; i < m; i++) {
			/* a variable field some events lack is skipped */
			while (j < k->field_count && !field_matches(&fields[i], &k->fields[j]) &&
			       k->fields[j].variable)
				j++;
			if (j >= k->field_count && k->variable_fields)
				break; /* the event's own fields (attributes) */
			if (j >= k->field_count || !field_matches(&fields[i], &k->fields[j])) {
				tu_fail(__FILE__, __LINE__, "%.*s: field %.*s is not in its kind",
					(int)ev->code_len, ev->code, (int)fields[i].name_len,
					fields[i].name);
				break;
			}
			j++;
		}
		for (; j < k->field_count; j++)
			CHECK(k->fields[j].variable);
	}
	weft_cursor_free(c);
	return n;
}

/* ROSS: one kind per record layout; the model data as bytes or by the schema. */
static void test_ross(void)
{
	static const char *const codes[] = { "PE", "KP", "LP", "LP", "MODEL",
					     "ANALYSIS_MODEL", "EVENT" };
	static const uint32_t sizes[] = { 128, 68, 72, 60, 48, 48, 24 };
	weft_trace *t = open_data("ross/im-everything/np1", NULL);
	REQUIRE(t != NULL);
	REQUIRE(weft_trace_event_schema_count(t) == 7);
	for (size_t i = 0; i < 7; i++) {
		const weft_event_schema *k = weft_trace_event_schema(t, i);
		CHECK_EQ_STR(k->code, codes[i]);
		CHECK_EQ_U64(k->payload_size, sizes[i]);
		CHECK_EQ_I64(k->role, i == 6 ? WEFT_ROLE_POINT : WEFT_ROLE_SAMPLE);
		CHECK_EQ_U64(k->data_size, 0);
	}
	CHECK(weft_trace_event_schema(t, 7) == NULL);
	const weft_event_schema *pe = weft_trace_event_schema(t, 0);
	CHECK_EQ_U64(pe->field_count, 28);
	CHECK_EQ_STR(pe->fields[0].name, "virtual_time");
	CHECK(pe->fields[0].type == WEFT_TYPE_F64 && !pe->fields[0].variable);
	const weft_event_schema *model = weft_trace_event_schema(t, 4);
	const weft_field_schema *last = &model->fields[model->field_count - 1];
	CHECK_EQ_STR(last->name, "model_data");
	CHECK(last->type == WEFT_TYPE_BYTES && last->variable && last->in_data);
	CHECK(weft_trace_event_schema_find(t, "LP", 2, 60) == weft_trace_event_schema(t, 3));
	CHECK(weft_trace_event_schema_find(t, "LP", 2, 0) == weft_trace_event_schema(t, 2));
	CHECK(weft_trace_event_schema_find(t, "XX", 2, 0) == NULL);
	uint64_t unlisted;
	CHECK(check_events_follow_kinds(t, &unlisted) > 1000);
	CHECK_EQ_U64(unlisted, 0);
	weft_trace_free(t);

	t = open_data("ross/im-everything/np1",
		      "MODEL: u32 magic, u32 lpid, i64 count; ANALYSIS_MODEL: u64 events, f64 vt");
	REQUIRE(t != NULL);
	model = weft_trace_event_schema(t, 4);
	CHECK_EQ_U64(model->data_size, 16);
	REQUIRE(model->field_count == 8 + 4);
	CHECK_EQ_STR(model->fields[8].name, "magic");
	CHECK(model->fields[8].in_data && !model->fields[8].variable);
	CHECK_EQ_STR(model->fields[11].name, "rest");
	CHECK(model->fields[11].variable);
	CHECK_EQ_U64(weft_trace_event_schema(t, 6)->data_size, 0); /* EVENT: no section */
	check_events_follow_kinds(t, &unlisted);
	CHECK_EQ_U64(unlisted, 0);
	weft_trace_free(t);
}

/* The header line of a ROSS table of `level`, written to a file. */
static char *table_header(weft_trace *t, const char *level, int *rc)
{
	char *dir = tu_mkdtemp("weft-table");
	char path[4200];
	weft_ross_table_options o;
	weft_ross_table_report report;

	REQUIRE(dir != NULL);
	snprintf(path, sizeof path, "%s/t.csv", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	weft_ross_table_options_init(&o);
	o.level = level;
	*rc = weft_ross_table_write(t, &o, fd, &report);
	close(fd);
	char *text = tu_read_file(path, NULL);
	REQUIRE(text != NULL);
	char *nl = strchr(text, '\n');
	if (nl != NULL)
		nl[0] = '\0';
	tu_finish_dir(dir);
	return text;
}

/* The table's columns are the kinds' fields, each name once. */
static void test_ross_table(void)
{
	weft_trace *t = open_data("ross/im-everything/np1",
		"MODEL: u32 magic, u32 lpid, i64 count; ANALYSIS_MODEL: u64 events, f64 vt");
	int rc;
	REQUIRE(t != NULL);
	char *header = table_header(t, "model", &rc);
	CHECK_EQ_I64(rc, 0);
	CHECK_EQ_STR(header, "file,offset,stream,kind,time_ns,virtual_time,real_time,is_end,"
		     "pe_id,kp_id,lp_id,gvt,stats_type,model_size,sample_size,magic,lpid,"
		     "count,rest,events,vt");
	free(header);
	header = table_header(t, "lp", &rc);
	CHECK_EQ_I64(rc, 0);
	CHECK_EQ_STR(header, "file,offset,stream,kind,time_ns,virtual_time,real_time,is_end,"
		     "pe_id,kp_id,lp_id,events_processed,events_aborted,events_rolled_back,"
		     "network_sends,network_receives,process_event_time_raw,efficiency");
	free(header);
	free(table_header(t, "bogus", &rc));
	CHECK_EQ_I64(rc, WEFT_EINVAL);
	CHECK_EQ_STR(weft_ross_table_level_name(3), "model");
	CHECK(weft_ross_table_level_name(5) == NULL);
	weft_trace_free(t);
	t = open_data("heph/heph_sample.bin.log", NULL);
	REQUIRE(t != NULL);
	free(table_header(t, "pe", &rc));
	CHECK_EQ_I64(rc, WEFT_EUNSUPPORTED);
	weft_trace_free(t);
}

/* ovni: the signature table, one kind per MCV; strings are variable. */
static void test_ovni(void)
{
	weft_trace *t = tu_open_data("ovni/v3/nosv-parallel-tasks/ovni", 0, NULL, NULL);
	REQUIRE(t != NULL);
	size_t n = weft_trace_event_schema_count(t);
	CHECK(n > 100 && n <= weft_ovni_signature_count());
	const weft_event_schema *k = weft_trace_event_schema_find(t, "VTx", 3, 0);
	REQUIRE(k != NULL);
	CHECK_EQ_STR(k->category, "nosv");
	CHECK_EQ_I64(k->role, WEFT_ROLE_POINT);
	REQUIRE(k->field_count == 3);
	CHECK_EQ_STR(k->fields[0].name, "taskid");
	CHECK_EQ_STR(k->fields[1].name, "bodyid");
	CHECK(k->fields[1].type == WEFT_TYPE_U32 && !k->fields[1].variable);
	CHECK_EQ_STR(k->fields[2].name, "extra");
	CHECK(k->fields[2].variable);
	k = weft_trace_event_schema_find(t, "6Yc", 3, 0);
	REQUIRE(k != NULL && k->field_count == 3);
	CHECK_EQ_STR(k->fields[1].name, "label");
	CHECK(k->fields[1].type == WEFT_TYPE_STR && k->fields[1].variable && k->fields[1].in_data);
	for (size_t i = 0; i < n; i++) /* one kind per MCV */
		CHECK(weft_trace_event_schema_find(t, weft_trace_event_schema(t, i)->code, 3, 0) ==
		      weft_trace_event_schema(t, i));
	uint64_t unlisted;
	CHECK(check_events_follow_kinds(t, &unlisted) > 100);
	CHECK_EQ_U64(unlisted, 0);
	weft_trace_free(t);
}

/* Pallas: one kind per record kind; attributes are the events' own. */
static void test_pallas(void)
{
	weft_trace *t = tu_open_data("pallas/wb_generic_f2_n20_t4_logical/trace/main.pallas", 0,
				     NULL, NULL);
	REQUIRE(t != NULL);
	REQUIRE(weft_trace_event_schema_count(t) == 60);
	const weft_event_schema *k = weft_trace_event_schema_find(t, "Enter", 5, 0);
	REQUIRE(k != NULL && k->field_count == 2);
	CHECK_EQ_I64(k->role, WEFT_ROLE_ENTER);
	CHECK(k->variable_fields);
	CHECK_EQ_STR(k->fields[0].name, "region");
	CHECK(k->fields[0].type == WEFT_TYPE_STR && k->fields[0].variable);
	CHECK_EQ_STR(k->fields[1].name, "region_ref");
	k = weft_trace_event_schema_find(t, "MPI_Isend", 9, 0);
	REQUIRE(k != NULL && k->field_count == 5);
	CHECK_EQ_STR(k->category, "mpi");
	CHECK_EQ_STR(k->fields[4].name, "request");
	CHECK(k->fields[4].type == WEFT_TYPE_U64);
	k = weft_trace_event_schema_find(t, "Generic", 7, 0);
	REQUIRE(k != NULL && k->field_count == 2);
	CHECK_EQ_STR(k->fields[1].name, "name_ref");
	uint64_t unlisted;
	CHECK(check_events_follow_kinds(t, &unlisted) > 100);
	CHECK_EQ_U64(unlisted, 0);
	weft_trace_free(t);
}

/*
 * Heph: one kind per event description, gathered by the open scan in the
 * order the file first has them, with the first event's attributes as
 * (variable) fields; every event follows its kind.
 */
static void test_heph(void)
{
	weft_trace *t = tu_open_data("heph/heph_sample.bin.log", 0, NULL, NULL);
	REQUIRE(t != NULL);
	CHECK_EQ_U64(weft_trace_event_schema_count(t), 17);
	CHECK(weft_trace_event_schema(t, 17) == NULL);
	CHECK(weft_trace_event_schema_find(t, "x", 1, 0) == NULL);
	const weft_event_schema *k = weft_trace_event_schema_find(t, "Scheduling processes",
								  20, 0);
	REQUIRE(k != NULL && k->field_count == 3);
	CHECK_EQ_I64(k->role, WEFT_ROLE_INTERVAL);
	CHECK(k->variable_fields);
	CHECK_EQ_STR(k->fields[0].name, "local amount");
	CHECK(k->fields[0].type == WEFT_TYPE_U64 && k->fields[0].variable);
	k = weft_trace_event_schema_find(t, "All attribute types", 19, 0);
	REQUIRE(k != NULL && k->field_count == 18);
	CHECK_EQ_STR(k->fields[15].name, "f64 array");
	CHECK(k->fields[15].type == WEFT_TYPE_F64 && k->fields[15].is_array);
	k = weft_trace_event_schema_find(t, "receiving message", 17, 0);
	REQUIRE(k != NULL);
	CHECK_EQ_U64(k->field_count, 0);
	uint64_t unlisted;
	CHECK(check_events_follow_kinds(t, &unlisted) > 20);
	CHECK_EQ_U64(unlisted, 0);
	weft_trace_free(t);
}

int main(void)
{
	test_heph();
	test_pallas();
	test_ovni();
	test_ross();
	test_ross_table();
	return tu_result();
}
