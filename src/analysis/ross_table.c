/* SPDX-License-Identifier: MIT */
/*
 * analysis/ross_table.c - weft_ross_table_write(): the records of one
 * level of a ROSS run (PE, KP or LP engine samples, model samples,
 * event-trace records) as a tidy CSV table, one row per record, one
 * named column per field (what `weft table` writes).
 *
 * The columns are known before any record is read: they are the fields
 * of the level's event kinds (weft/schema.h: the record layouts, then
 * the model data as the model schema decodes it), without knowing either
 * here. Rows are written as the merged cursor delivers the records (file
 * order), or sorted by virtual or real time through an external merge
 * sort (bounded memory, sorted runs in a temporary file). See
 * docs/ross.md.
 */
#include <float.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ross_analysis.h"
#include "outputs/bg_writer.h"
#include "outputs/csv_writer.h"
#include "outputs/outputs.h"
#include "outputs/pipeline.h"
#include "outputs/row_sort.h"

/* Default memory of the sort before it spills runs (whole process < 64 MB). */
#define DEFAULT_SORT_BUDGET (32ull << 20)
/* Columns every table starts with (before the record's own fields). */
#define COMMON_HEADER "file,offset,stream,kind,time_ns,virtual_time,real_time,is_end"
/* Most fields a record may have (schema: 256 + the layout's + rest). */
#define MAX_FIELDS 300

/* A level: its name and the codes of its records. */
typedef struct level_def {
	const char *name;
	const char *code_pattern;
} level_def;

static const level_def levels[] = {
	{ "pe", "PE" },
	{ "kp", "KP" },
	{ "lp", "LP" },
	{ "model", "*MODEL" },
	{ "event", "EVENT" },
};
#define LEVEL_COUNT (sizeof levels / sizeof levels[0])

/* The level named `name`, or NULL. */
static const level_def *find_level(const char *name)
{
	for (size_t i = 0; name != NULL && i < LEVEL_COUNT; i++)
		if (strcmp(levels[i].name, name) == 0)
			return &levels[i];
	return NULL;
}

const char *weft_ross_table_level_name(size_t i)
{
	return i < LEVEL_COUNT ? levels[i].name : NULL;
}

/* ---- Columns -------------------------------------------------------------------- */

typedef struct column {
	char *name;
	int from_model_data; /* decoded from the model data (schema or hex) */
} column;

/*
 * The layout of one code and field count as met in the data: the column
 * of each field and the fields that give the time columns.
 */
typedef struct field_map {
	char code[24];
	uint32_t code_len;
	uint32_t payload_size;
	int field_count;
	int *field_of_column;  /* per record column: field index, or -1 */
	int vt_field, rt_field;
} field_map;

/*
 * The text of the last value of a float column: consecutive records of a
 * dump share their virtual and real times, so most of those cells are a
 * copy instead of a conversion.
 */
typedef struct float_cache {
	uint64_t bits;
	uint8_t len;
	char text[WEFT__CSV_FLOAT_MAX];
} float_cache;

/* Float cache slots: virtual_time, real_time, then the record columns. */
#define CACHE_VT 0
#define CACHE_RT 1
#define CACHE_COLUMNS 2

typedef struct table_state {
	weft_trace *trace;
	const level_def *level;
	int order;               /* enum weft_ross_table_order */
	column *cols;
	size_t col_count;
	field_map *maps;
	size_t map_count;
	size_t last_map;
	weft_field fields[MAX_FIELDS];
	uint8_t *pad;            /* model data padded for short-data records */
	size_t pad_cap;
	weft__csv_row row;       /* the row being built; unsorted: many rows */
	weft__bg_writer writer;  /* writes full row buffers from a second thread */
	int writing;             /* the writer was started */
	weft__row_sorter *sorter;
	float_cache *floats;     /* per float column: its last value's text */
	uint64_t rows, short_data;
} table_state;

/* Adds a column unless one has that name; -1 when out of memory. */
static int add_column(table_state *t, const char *field, int from_model_data)
{
	for (size_t i = 0; i < t->col_count; i++)
		if (strcmp(field, t->cols[i].name) == 0)
			return 0;
	if (strcmp(field, "virtual_time") == 0 || strcmp(field, "real_time") == 0)
		return 0; /* they are common columns */
	column *bigger = realloc(t->cols, (t->col_count + 1) * sizeof *bigger);
	if (bigger == NULL)
		return -1;
	t->cols = bigger;
	char *name = strdup(field);
	if (name == NULL)
		return -1;
	t->cols[t->col_count++] = (column){ name, from_model_data };
	return 0;
}

/* 1 when the event kind `k` is one of the level's record kinds. */
static int level_has(const level_def *level, const weft_event_schema *k)
{
	return fnmatch(level->code_pattern, k->code, 0) == 0;
}

/*
 * The columns of a level, from the trace's event kinds (weft/schema.h):
 * the fixed fields of its record kinds, then their model data fields,
 * each name once, in order of first appearance.
 */
static int build_columns(table_state *t)
{
	size_t n = weft_trace_event_schema_count(t->trace);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++) {
			const weft_event_schema *k = weft_trace_event_schema(t->trace, i);
			if (!level_has(t->level, k))
				continue;
			for (size_t j = 0; j < k->field_count; j++)
				if (k->fields[j].in_data == pass &&
				    add_column(t, k->fields[j].name, pass) < 0)
					return WEFT_ENOMEM;
		}
	return 0;
}

/* The header line: the common columns, then the record columns. */
static void put_header(table_state *t)
{
	weft__csv_row_put(&t->row, COMMON_HEADER, strlen(COMMON_HEADER));
	for (size_t i = 0; i < t->col_count; i++) {
		weft__csv_row_put(&t->row, ",", 1);
		weft__csv_row_put_text(&t->row, t->cols[i].name, strlen(t->cols[i].name));
	}
	weft__csv_row_put(&t->row, "\n", 1);
}

/* ---- Field maps ------------------------------------------------------------------ */

/* The column named like field f, or -1. */
static int column_of(const table_state *t, const weft_field *f)
{
	for (size_t i = 0; i < t->col_count; i++)
		if (weft__field_is(f, t->cols[i].name))
			return (int)i;
	return -1;
}

/* A new map for the layout of `ev` whose n fields are in t->fields. */
static field_map *add_map(table_state *t, const weft_event *ev, int n)
{
	field_map *bigger = realloc(t->maps, (t->map_count + 1) * sizeof *bigger);
	if (bigger == NULL)
		return NULL;
	t->maps = bigger;
	field_map *m = &t->maps[t->map_count];
	memset(m, 0, sizeof *m);
	m->code_len = ev->code_len < sizeof m->code ? ev->code_len : (uint32_t)sizeof m->code;
	memcpy(m->code, ev->code, m->code_len);
	m->payload_size = ev->payload_size;
	m->field_count = n;
	m->vt_field = m->rt_field = -1;
	m->field_of_column = malloc((t->col_count ? t->col_count : 1) * sizeof(int));
	if (m->field_of_column == NULL)
		return NULL;
	for (size_t c = 0; c < t->col_count; c++)
		m->field_of_column[c] = -1;
	for (int k = 0; k < n; k++) {
		int c = column_of(t, &t->fields[k]);
		if (c >= 0)
			m->field_of_column[c] = k;
		if (weft__field_is(&t->fields[k], "virtual_time") ||
		    (m->vt_field < 0 && weft__field_is(&t->fields[k], "virtual_recv_time")))
			m->vt_field = k;
		if (weft__field_is(&t->fields[k], "real_time"))
			m->rt_field = k;
	}
	t->map_count++;
	return m;
}

/* The map of an event's layout (cached: a handful of layouts per run). */
static field_map *map_for(table_state *t, const weft_event *ev, int n)
{
	for (size_t i = 0; i < t->map_count; i++) {
		size_t j = (t->last_map + i) % t->map_count;
		field_map *m = &t->maps[j];
		if (m->field_count == n && m->payload_size == ev->payload_size &&
		    m->code_len == ev->code_len && memcmp(m->code, ev->code, m->code_len) == 0) {
			t->last_map = j;
			return m;
		}
	}
	t->last_map = t->map_count;
	return add_map(t, ev, n);
}

/*
 * Fields of a record whose model data is shorter than the schema: the
 * record decoded with its data padded with zeros to the schema's size
 * (the model columns are then left empty). Returns the count, or < 0.
 */
static int decode_short_record(table_state *t, const weft_event *ev)
{
	const weft_event_schema *k = weft_trace_event_schema_find(t->trace, ev->code,
								 ev->code_len, ev->payload_size);
	uint32_t section = k != NULL ? k->data_size : 0;
	if (section == 0 || ev->data_size >= section)
		return WEFT_EFORMAT;
	if (t->pad_cap < section) {
		uint8_t *bigger = realloc(t->pad, section);
		if (bigger == NULL)
			return WEFT_ENOMEM;
		t->pad = bigger;
		t->pad_cap = section;
	}
	memset(t->pad, 0, section);
	memcpy(t->pad, ev->data, (size_t)ev->data_size);
	weft_event copy = *ev;
	copy.data = t->pad;
	copy.data_size = section;
	return weft_event_fields(t->trace, &copy, t->fields, MAX_FIELDS);
}

/* ---- Rows ------------------------------------------------------------------------- */

/*
 * A float cell: the shortest round-trip text, empty for NaN and
 * infinities; the column's last text is reused for the same value.
 */
static void put_float(weft__csv_row *row, float_cache *cache, double v, int single)
{
	uint64_t bits;
	if (v - v != 0)
		return; /* NaN or infinite */
	memcpy(&bits, &v, sizeof bits);
	bits ^= (uint64_t)single; /* a float and a double never share a text */
	char *p = weft__csv_row_reserve(row, WEFT__CSV_FLOAT_MAX);
	if (cache->len == 0 || cache->bits != bits) {
		char *end = weft__csv_float(cache->text, v, single);
		cache->len = (uint8_t)(end - cache->text);
		cache->bits = bits;
	}
	memcpy(p, cache->text, WEFT__CSV_FLOAT_MAX);
	weft__csv_row_commit(row, p + cache->len);
}

/* An unsigned integer cell. */
static void put_u64(weft__csv_row *row, uint64_t v)
{
	char *p = weft__csv_row_reserve(row, 24);
	weft__csv_row_commit(row, weft__fmt_u64(p, v));
}

/* The value of one field as a cell (floats through the column's cache). */
static void put_field(weft__csv_row *row, float_cache *cache, const weft_field *f)
{
	switch (f->type) {
	case WEFT_TYPE_U8: case WEFT_TYPE_U16: case WEFT_TYPE_U32: case WEFT_TYPE_U64:
		put_u64(row, f->v.u);
		break;
	case WEFT_TYPE_I8: case WEFT_TYPE_I16: case WEFT_TYPE_I32: case WEFT_TYPE_I64: {
		char *p = weft__csv_row_reserve(row, 24);
		weft__csv_row_commit(row, weft__fmt_i64(p, f->v.i));
		break;
	}
	case WEFT_TYPE_F32:
		put_float(row, cache, f->v.f, 1);
		break;
	case WEFT_TYPE_F64:
		put_float(row, cache, f->v.f, 0);
		break;
	case WEFT_TYPE_BOOL:
		weft__csv_row_put(row, f->v.u ? "true" : "false", f->v.u ? 4 : 5);
		break;
	case WEFT_TYPE_BYTES:
		weft__csv_row_put_hex(row, (const uint8_t *)f->v.s.ptr, f->v.s.len);
		break;
	default:
		weft__csv_row_put_text(row, f->v.s.ptr, f->v.s.len);
		break;
	}
}

/* The common cells: file, offset, stream, kind, time_ns, times, is_end. */
static void put_common(table_state *t, const weft_event *ev, const field_map *m)
{
	const weft_stream_info *si = weft_trace_stream(t->trace, ev->stream);
	weft__csv_row *row = &t->row;
	weft__csv_row_put_text(row, si->file, strlen(si->file));
	weft__csv_row_put(row, ",", 1);
	put_u64(row, ev->offset);
	weft__csv_row_put(row, ",", 1);
	weft__csv_row_put_text(row, si->path, strlen(si->path));
	weft__csv_row_put(row, ",", 1);
	weft__csv_row_put_text(row, ev->code, ev->code_len);
	weft__csv_row_put(row, ",", 1);
	put_u64(row, ev->time);
	weft__csv_row_put(row, ",", 1);
	double vt = m->vt_field >= 0 ? t->fields[m->vt_field].v.f : 0;
	if (m->vt_field >= 0)
		put_field(row, &t->floats[CACHE_VT], &t->fields[m->vt_field]);
	weft__csv_row_put(row, ",", 1);
	if (m->rt_field >= 0)
		put_field(row, &t->floats[CACHE_RT], &t->fields[m->rt_field]);
	int end = m->vt_field >= 0 && (vt == DBL_MAX || vt > DBL_MAX);
	weft__csv_row_put(row, end ? ",true" : ",false", end ? 5 : 6);
}

/* The record columns; model columns empty when the data was too short. */
static void put_record_cells(table_state *t, const field_map *m, int short_data)
{
	for (size_t c = 0; c < t->col_count; c++) {
		weft__csv_row_put(&t->row, ",", 1);
		int k = m->field_of_column[c];
		if (k >= 0 && !(short_data && t->cols[c].from_model_data))
			put_field(&t->row, &t->floats[CACHE_COLUMNS + c], &t->fields[k]);
	}
	weft__csv_row_put(&t->row, "\n", 1);
}

/* The sort key of a row: its virtual or real time. */
static uint64_t row_key(const table_state *t, const field_map *m)
{
	int k = t->order == WEFT_ROSS_ORDER_VIRTUAL ? m->vt_field : m->rt_field;
	return k >= 0 ? weft__sort_key_double(t->fields[k].v.f) : UINT64_MAX;
}

/* Rows are written out once this many bytes are buffered. */
#define ROWS_FLUSH (1u << 20)

/*
 * Hands the buffered rows to the writer thread and goes on with an empty
 * buffer. 0, or WEFT_EIO with the message set.
 */
static int flush_rows(table_state *t)
{
	int rc = weft__bg_writer_submit(&t->writer, &t->row.buf, &t->row.cap, t->row.len);
	t->row.len = 0;
	return rc;
}

/* One record: decoded, formatted, then buffered or handed to the sort. */
static int table_record(table_state *t, const weft_event *ev)
{
	int short_data = 0;
	int n = weft_event_fields(t->trace, ev, t->fields, MAX_FIELDS);
	if (n < 0 && (n = decode_short_record(t, ev)) >= 0) {
		short_data = 1;
		t->short_data++;
	}
	if (n < 0)
		return n;
	if (n > MAX_FIELDS)
		return weft__error(WEFT_EUNSUPPORTED, weft_trace_stream(t->trace, ev->stream)->file,
				   ev->offset, "expected at most %d fields, found %d", MAX_FIELDS, n);
	field_map *m = map_for(t, ev, n);
	if (m == NULL)
		return WEFT_ENOMEM;
	size_t start = t->row.len; /* unsorted: the row buffer holds many rows */
	put_common(t, ev, m);
	put_record_cells(t, m, short_data);
	if (t->row.oom)
		return WEFT_ENOMEM;
	t->rows++;
	if (t->sorter != NULL) {
		size_t len = t->row.len - start;
		t->row.len = start;
		return weft__row_sorter_add(t->sorter, row_key(t, m), t->row.buf + start, len);
	}
	return t->row.len >= ROWS_FLUSH ? flush_rows(t) : 0;
}

/* ---- The analysis --------------------------------------------------------------------- */

/* Writes a sorted row to the output (through the row buffer). */
static int emit_sorted(void *ctx, const char *row, size_t len)
{
	table_state *t = ctx;
	weft__csv_row_put(&t->row, row, len);
	if (t->row.oom)
		return WEFT_ENOMEM;
	return t->row.len >= ROWS_FLUSH ? flush_rows(t) : 0;
}

/* Frees what the state holds (not the trace). */
static void table_state_free(table_state *t)
{
	for (size_t i = 0; i < t->col_count; i++)
		free(t->cols[i].name);
	free(t->cols);
	for (size_t i = 0; i < t->map_count; i++)
		free(t->maps[i].field_of_column);
	free(t->maps);
	free(t->pad);
	free(t->floats);
	weft__csv_row_free(&t->row);
	if (t->writing)
		weft__bg_writer_finish(&t->writer);
	weft__row_sorter_free(t->sorter);
}

/* What take_records() needs: the table, and the error that stopped it. */
typedef struct record_sink {
	table_state *t;
	weft__error_copy error; /* the consumer may run in another thread */
} record_sink;

/* A run of records into the table (weft__consume_fn); non-zero stops. */
static int take_records(void *ctx, const weft_event *events, size_t count)
{
	record_sink *sink = ctx;

	for (size_t i = 0; i < count; i++) {
		int rc = table_record(sink->t, &events[i]);
		if (rc != 0)
			return weft__error_save(&sink->error, rc < 0 ? rc : WEFT_EIO) != 0;
	}
	return 0;
}

/*
 * Every record of the level through one merged cursor; with two threads
 * (weft__pipeline_wanted(): --threads 2 or more, or a large run), one
 * reads and merges the files while the other formats the rows, in the
 * same order, so the table does not depend on it.
 */
static int read_records(table_state *t, const weft_ross_table_options *s)
{
	weft_filter filter;
	weft_cursor *cursor;
	record_sink sink = { .t = t };

	memset(&filter, 0, sizeof filter);
	filter.code_pattern = t->level->code_pattern;
	filter.stream_pattern = s->stream_pattern;
	int rc = weft_cursor_create(t->trace, &filter, &cursor);
	if (rc < 0)
		return rc;
	int threaded = weft__pipeline_wanted(t->trace);
	weft__trace_threads_note(t->trace, threaded ? 2 : 1);
	rc = weft__pipeline_run(cursor, take_records, &sink, threaded);
	weft_cursor_free(cursor);
	if (sink.error.status < 0)
		return weft__error_raise(&sink.error);
	return rc;
}

/* Header, rows (sorted when asked), flush; 0 or a WEFT_E* code. */
static int write_table(table_state *t, const weft_ross_table_options *s, int fd)
{
	int rc = 0;
	weft__bg_writer_start(&t->writer, fd);
	t->writing = 1;
	if (t->order != WEFT_ROSS_ORDER_FILE)
		rc = weft__row_sorter_create(s->sort_budget ? s->sort_budget : DEFAULT_SORT_BUDGET,
					     NULL, &t->sorter);
	if (rc == 0)
		rc = build_columns(t);
	if (rc == 0 && (t->floats = calloc(CACHE_COLUMNS + t->col_count, sizeof *t->floats)) == NULL)
		rc = WEFT_ENOMEM;
	if (rc == 0) {
		put_header(t);
		rc = flush_rows(t);
	}
	if (rc == 0)
		rc = read_records(t, s);
	if (rc == 0 && t->sorter != NULL)
		rc = weft__row_sorter_finish(t->sorter, emit_sorted, t);
	if (rc == 0)
		rc = flush_rows(t);
	int wrc = weft__bg_writer_finish(&t->writer);
	t->writing = 0;
	return rc != 0 ? rc : wrc;
}

void weft_ross_table_options_init(weft_ross_table_options *options)
{
	memset(options, 0, sizeof *options);
}

/* The level's table into fd; the counts go to *report. */
static int table_run(weft_trace *trace, const weft_ross_table_options *options, int fd,
		     weft_ross_table_report *report)
{
	table_state t;
	int rc = weft_ross_analysable(trace);

	memset(report, 0, sizeof *report);
	if (rc < 0)
		return rc;
	memset(&t, 0, sizeof t);
	t.trace = trace;
	t.level = find_level(options->level);
	t.order = options->order;
	if (t.level == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "unknown level '%s'",
				   options->level ? options->level : "(none)");
	weft__csv_row_init(&t.row);
	rc = write_table(&t, options, fd);
	report->rows = t.rows;
	report->short_data = t.short_data;
	table_state_free(&t);
	return rc;
}

/* The operation above, as a phase of the progress ("tabulating"). */
int weft_ross_table_write(weft_trace *trace, const weft_ross_table_options *options, int fd,
			  weft_ross_table_report *report)
{
	weft__progress_begin(trace, "tabulating");
	return weft__progress_end_with(trace, table_run(trace, options, fd, report));
}
