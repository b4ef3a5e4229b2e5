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
 * sort (bounded memory, sorted runs in a temporary file). With threads,
 * each formats batches of records with a row maker of its own and the
 * rows go out (or to the sort) in batch order (outputs/pipeline.h: the
 * farm), so the table does not depend on their number. See docs/ross.md.
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

typedef struct row_maker row_maker;

/* The table: its columns, the output and the sort. */
typedef struct table_state {
	weft_trace *trace;
	const level_def *level;
	int order;               /* enum weft_ross_table_order */
	column *cols;
	size_t col_count;
	weft__csv_row out;       /* rows on their way to the writer */
	weft__bg_writer writer;  /* writes full row buffers from a second thread */
	int writing;             /* the writer was started */
	weft__row_sorter *sorter;
	row_maker *makers;       /* one per thread that formats rows */
	int maker_count;
	weft__error_copy emit_error; /* what stopped the farm's rows */
} table_state;

/*
 * What formats rows, one per thread (a row depends on nothing but its
 * record, so that threads can format batches of records at once).
 */
struct row_maker {
	const table_state *t;
	field_map *maps;
	size_t map_count;
	size_t last_map;
	weft_field fields[MAX_FIELDS];
	uint8_t *pad;            /* model data padded for short-data records */
	size_t pad_cap;
	weft__csv_row row;       /* the rows being built */
	float_cache *floats;     /* per float column: its last value's text */
	uint64_t rows, short_data;
};

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
	weft__csv_row_put(&t->out, COMMON_HEADER, strlen(COMMON_HEADER));
	for (size_t i = 0; i < t->col_count; i++) {
		weft__csv_row_put(&t->out, ",", 1);
		weft__csv_row_put_text(&t->out, t->cols[i].name, strlen(t->cols[i].name));
	}
	weft__csv_row_put(&t->out, "\n", 1);
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

/* A new map for the layout of `ev` whose n fields are in rm->fields. */
static field_map *add_map(row_maker *rm, const weft_event *ev, int n)
{
	const table_state *t = rm->t;
	field_map *bigger = realloc(rm->maps, (rm->map_count + 1) * sizeof *bigger);
	if (bigger == NULL)
		return NULL;
	rm->maps = bigger;
	field_map *m = &rm->maps[rm->map_count];
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
		int c = column_of(t, &rm->fields[k]);
		if (c >= 0)
			m->field_of_column[c] = k;
		if (weft__field_is(&rm->fields[k], "virtual_time") ||
		    (m->vt_field < 0 && weft__field_is(&rm->fields[k], "virtual_recv_time")))
			m->vt_field = k;
		if (weft__field_is(&rm->fields[k], "real_time"))
			m->rt_field = k;
	}
	rm->map_count++;
	return m;
}

/* The map of an event's layout (cached: a handful of layouts per run). */
static field_map *map_for(row_maker *rm, const weft_event *ev, int n)
{
	for (size_t i = 0; i < rm->map_count; i++) {
		size_t j = (rm->last_map + i) % rm->map_count;
		field_map *m = &rm->maps[j];
		if (m->field_count == n && m->payload_size == ev->payload_size &&
		    m->code_len == ev->code_len && memcmp(m->code, ev->code, m->code_len) == 0) {
			rm->last_map = j;
			return m;
		}
	}
	rm->last_map = rm->map_count;
	return add_map(rm, ev, n);
}

/*
 * Fields of a record whose model data is shorter than the schema: the
 * record decoded with its data padded with zeros to the schema's size
 * (the model columns are then left empty). Returns the count, or < 0.
 */
static int decode_short_record(row_maker *rm, const weft_event *ev)
{
	const weft_event_schema *k = weft_trace_event_schema_find(rm->t->trace, ev->code,
								 ev->code_len, ev->payload_size);
	uint32_t section = k != NULL ? k->data_size : 0;
	if (section == 0 || ev->data_size >= section)
		return WEFT_EFORMAT;
	if (rm->pad_cap < section) {
		uint8_t *bigger = realloc(rm->pad, section);
		if (bigger == NULL)
			return WEFT_ENOMEM;
		rm->pad = bigger;
		rm->pad_cap = section;
	}
	memset(rm->pad, 0, section);
	memcpy(rm->pad, ev->data, (size_t)ev->data_size);
	weft_event copy = *ev;
	copy.data = rm->pad;
	copy.data_size = section;
	return weft_event_fields(rm->t->trace, &copy, rm->fields, MAX_FIELDS);
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
static void put_common(row_maker *rm, const weft_event *ev, const field_map *m)
{
	const weft_stream_info *si = weft_trace_stream(rm->t->trace, ev->stream);
	weft__csv_row *row = &rm->row;
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
	double vt = m->vt_field >= 0 ? rm->fields[m->vt_field].v.f : 0;
	if (m->vt_field >= 0)
		put_field(row, &rm->floats[CACHE_VT], &rm->fields[m->vt_field]);
	weft__csv_row_put(row, ",", 1);
	if (m->rt_field >= 0)
		put_field(row, &rm->floats[CACHE_RT], &rm->fields[m->rt_field]);
	int end = m->vt_field >= 0 && (vt == DBL_MAX || vt > DBL_MAX);
	weft__csv_row_put(row, end ? ",true" : ",false", end ? 5 : 6);
}

/* The record columns; model columns empty when the data was too short. */
static void put_record_cells(row_maker *rm, const field_map *m, int short_data)
{
	const table_state *t = rm->t;
	for (size_t c = 0; c < t->col_count; c++) {
		weft__csv_row_put(&rm->row, ",", 1);
		int k = m->field_of_column[c];
		if (k >= 0 && !(short_data && t->cols[c].from_model_data))
			put_field(&rm->row, &rm->floats[CACHE_COLUMNS + c], &rm->fields[k]);
	}
	weft__csv_row_put(&rm->row, "\n", 1);
}

/* The sort key of a row: its virtual or real time. */
static uint64_t row_key(const row_maker *rm, const field_map *m)
{
	int k = rm->t->order == WEFT_ROSS_ORDER_VIRTUAL ? m->vt_field : m->rt_field;
	return k >= 0 ? weft__sort_key_double(rm->fields[k].v.f) : UINT64_MAX;
}

/*
 * One record as a row at the end of rm->row, and its sort key in *key.
 * 0, or a WEFT_E* code.
 */
static int make_row(row_maker *rm, const weft_event *ev, uint64_t *key)
{
	int short_data = 0;
	int n = weft_event_fields(rm->t->trace, ev, rm->fields, MAX_FIELDS);
	if (n < 0 && (n = decode_short_record(rm, ev)) >= 0) {
		short_data = 1;
		rm->short_data++;
	}
	if (n < 0)
		return n;
	if (n > MAX_FIELDS)
		return weft__error(WEFT_EUNSUPPORTED,
				   weft_trace_stream(rm->t->trace, ev->stream)->file, ev->offset,
				   "expected at most %d fields, found %d", MAX_FIELDS, n);
	field_map *m = map_for(rm, ev, n);
	if (m == NULL)
		return WEFT_ENOMEM;
	put_common(rm, ev, m);
	put_record_cells(rm, m, short_data);
	if (rm->row.oom)
		return WEFT_ENOMEM;
	rm->rows++;
	*key = row_key(rm, m);
	return 0;
}

/* Rows are written out once this many bytes are buffered. */
#define ROWS_FLUSH (1u << 20)

/*
 * Hands the rows buffered in `row` to the writer thread and goes on with
 * an empty buffer. 0, or WEFT_EIO with the message set.
 */
static int flush_rows(table_state *t, weft__csv_row *row)
{
	int rc = weft__bg_writer_submit(&t->writer, &row->buf, &row->cap, row->len);
	row->len = 0;
	return rc;
}

/* One record on the only thread: a row buffered, or handed to the sort. */
static int table_record(table_state *t, const weft_event *ev)
{
	row_maker *rm = &t->makers[0];
	size_t start = rm->row.len; /* unsorted: the row buffer holds many rows */
	uint64_t key;
	int rc = make_row(rm, ev, &key);
	if (rc < 0)
		return rc;
	if (t->sorter != NULL) {
		size_t len = rm->row.len - start;
		rm->row.len = start;
		return weft__row_sorter_add(t->sorter, key, rm->row.buf + start, len);
	}
	return rm->row.len >= ROWS_FLUSH ? flush_rows(t, &rm->row) : 0;
}

/* ---- Rows formatted by a farm of threads ---------------------------------------------- */

/*
 * A sorted table's rows are framed while threads format them: the sort
 * key (8 bytes), the row's length (4), then the row, for the emit to hand
 * them to the sort in order.
 */
#define FRAME_BYTES 12

/* A batch of records into rows with the row maker of thread `worker`. */
static int format_rows(void *ctx, int worker, const weft_event *events, size_t count,
		       weft__farm_text *text)
{
	table_state *t = ctx;
	row_maker *rm = &t->makers[worker];
	int framed = t->sorter != NULL;
	int rc = 0;

	rm->row = (weft__csv_row){ .buf = text->buf, .len = text->len, .cap = text->cap };
	for (size_t i = 0; rc == 0 && i < count; i++) {
		size_t frame = rm->row.len;
		if (framed) {
			char *p = weft__csv_row_reserve(&rm->row, FRAME_BYTES);
			weft__csv_row_commit(&rm->row, p + FRAME_BYTES);
		}
		uint64_t key;
		rc = make_row(rm, &events[i], &key);
		if (rc == 0 && framed) {
			uint32_t len = (uint32_t)(rm->row.len - frame - FRAME_BYTES);
			memcpy(rm->row.buf + frame, &key, sizeof key);
			memcpy(rm->row.buf + frame + sizeof key, &len, sizeof len);
		}
	}
	*text = (weft__farm_text){ .buf = rm->row.buf, .len = rm->row.len, .cap = rm->row.cap };
	rm->row = (weft__csv_row){ 0 };
	return rc;
}

/* Writes rows to the output (through the output buffer). */
static int emit_row(void *ctx, const char *row, size_t len)
{
	table_state *t = ctx;
	weft__csv_row_put(&t->out, row, len);
	if (t->out.oom)
		return WEFT_ENOMEM;
	return t->out.len >= ROWS_FLUSH ? flush_rows(t, &t->out) : 0;
}

/*
 * A batch's rows, in batch order: to the output, or to the sort. Non-zero
 * stops the farm, the error kept for read_records().
 */
static int emit_rows(void *ctx, const char *text, size_t len)
{
	table_state *t = ctx;
	int rc = 0;

	if (t->sorter == NULL)
		rc = emit_row(t, text, len);
	while (t->sorter != NULL && rc == 0 && len >= FRAME_BYTES) {
		uint64_t key;
		uint32_t row_len;
		memcpy(&key, text, sizeof key);
		memcpy(&row_len, text + sizeof key, sizeof row_len);
		rc = weft__row_sorter_add(t->sorter, key, text + FRAME_BYTES, row_len);
		text += FRAME_BYTES + row_len;
		len -= FRAME_BYTES + row_len;
	}
	if (rc < 0)
		weft__error_save(&t->emit_error, rc);
	return rc != 0;
}

/* ---- The analysis --------------------------------------------------------------------- */

/* Frees what the state holds (not the trace). */
static void table_state_free(table_state *t)
{
	for (size_t i = 0; i < t->col_count; i++)
		free(t->cols[i].name);
	free(t->cols);
	for (int w = 0; t->makers != NULL && w < t->maker_count; w++) {
		row_maker *rm = &t->makers[w];
		for (size_t i = 0; i < rm->map_count; i++)
			free(rm->maps[i].field_of_column);
		free(rm->maps);
		free(rm->pad);
		free(rm->floats);
		weft__csv_row_free(&rm->row);
	}
	free(t->makers);
	weft__csv_row_free(&t->out);
	if (t->writing)
		weft__bg_writer_finish(&t->writer);
	weft__row_sorter_free(t->sorter);
}

/* A row maker per thread (the columns known); 0 or WEFT_ENOMEM. */
static int make_makers(table_state *t, int threads)
{
	t->makers = calloc((size_t)threads, sizeof *t->makers);
	if (t->makers == NULL)
		return WEFT_ENOMEM;
	t->maker_count = threads;
	for (int w = 0; w < threads; w++) {
		t->makers[w].t = t;
		weft__csv_row_init(&t->makers[w].row);
		t->makers[w].floats = calloc(CACHE_COLUMNS + t->col_count, sizeof(float_cache));
		if (t->makers[w].floats == NULL)
			return WEFT_ENOMEM;
	}
	return 0;
}

/*
 * Every record of the level through one merged cursor, formatted on this
 * thread, or by a farm of threads (weft__farm_threads(): --threads, or a
 * large run) that write the rows in the same order, so that the table
 * does not depend on it.
 */
static int read_records(table_state *t, const weft_ross_table_options *s)
{
	weft_filter filter;
	weft_cursor *cursor;

	memset(&filter, 0, sizeof filter);
	filter.code_pattern = t->level->code_pattern;
	filter.stream_pattern = s->stream_pattern;
	int rc = weft_cursor_create(t->trace, &filter, &cursor);
	if (rc < 0)
		return rc;
	weft__trace_threads_note(t->trace, t->maker_count);
	if (t->maker_count > 1) {
		weft__farm farm = { format_rows, emit_rows, t };
		rc = weft__farm_run(cursor, &farm, t->maker_count);
		if (rc == 1)
			rc = weft__error_raise(&t->emit_error);
	} else {
		const weft_event *ev;
		while ((rc = weft_cursor_next(cursor, &ev)) == 1)
			if ((rc = table_record(t, ev)) != 0)
				break;
	}
	weft_cursor_free(cursor);
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
	if (rc == 0)
		rc = make_makers(t, weft__farm_threads(t->trace));
	if (rc == 0) {
		put_header(t);
		rc = flush_rows(t, &t->out);
	}
	if (rc == 0)
		rc = read_records(t, s);
	if (rc == 0) /* rows a single thread buffered */
		rc = flush_rows(t, &t->makers[0].row);
	if (rc == 0 && t->sorter != NULL)
		rc = weft__row_sorter_finish(t->sorter, emit_row, t);
	if (rc == 0)
		rc = flush_rows(t, &t->out);
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
	weft__csv_row_init(&t.out);
	rc = write_table(&t, options, fd);
	for (int w = 0; w < t.maker_count; w++) {
		report->rows += t.makers[w].rows;
		report->short_data += t.makers[w].short_data;
	}
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
