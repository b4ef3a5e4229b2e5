/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_table.c - `weft table`: the records of one level of a ROSS run
 * (PE, KP or LP engine samples, model samples, event-trace records) as a
 * tidy CSV table, one row per record, one named column per field.
 *
 * The columns are known before any record is read: each level's record
 * layouts are decoded once on a made-up record (zero payload, model data
 * of zeros and then of 0x5a bytes: the fields whose value changes come
 * from the model data), which gives the field names of the layout and of
 * the model schema, in order, without knowing either here. Rows are
 * written as the merged cursor delivers the records (file order), or
 * sorted by virtual or real time through an external merge sort (bounded
 * memory, sorted runs in a temporary file). See docs/ross.md.
 */
#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/outfile.h"
#include "cli/ross_cli.h"
#include "outputs/bg_writer.h"
#include "outputs/csv_writer.h"
#include "outputs/outputs.h"
#include "outputs/row_sort.h"

enum table_option_id {
	OPT_LEVEL = 100,
	OPT_OUTPUT,
	OPT_SORT,
	OPT_FORCE,
	OPT_STREAM,
	OPT_SORT_BUDGET
};

static const cli_option table_options[] = {
	CLI_COMMON_OPTIONS,
	{ "level", 'l', 1, OPT_LEVEL },
	{ "output", 'o', 1, OPT_OUTPUT },
	{ "sort", 0, 1, OPT_SORT },
	{ "force", 'f', 0, OPT_FORCE },
	{ "stream", 0, 1, OPT_STREAM },
	{ "sort-budget", 0, 1, OPT_SORT_BUDGET },
	{ NULL, 0, 0, 0 }
};

/* Default memory of the sort before it spills runs (whole process < 64 MB). */
#define DEFAULT_SORT_BUDGET (32ull << 20)
/* Columns every table starts with (before the record's own fields). */
#define COMMON_HEADER "file,offset,stream,kind,time_ns,virtual_time,real_time,is_end"
/* Most fields a record may have (schema: 256 + the layout's + rest). */
#define MAX_FIELDS 300

/* Usage text of `weft table --help`. */
static void print_table_help(void)
{
	printf("usage: weft table [OPTIONS] --level LEVEL -o FILE.csv RUN\n"
	       "\n"
	       "Writes the records of one level of a ROSS run as CSV: one row per\n"
	       "record, a header of column names, quoting per RFC 4180, numbers that\n"
	       "read back exactly (float32 fields to the same float32).\n"
	       "\n"
	       "columns: file, offset, stream, kind, time_ns, virtual_time, real_time,\n"
	       "is_end, then the record's fields (docs/ross.md). virtual_time is the\n"
	       "receive time for event records; is_end is true for the samples taken\n"
	       "at the end (virtual time DBL_MAX). NaN and infinite values are empty.\n"
	       "Model data is a hex column model_data, or the schema's columns with\n"
	       "--ross-model-schema.\n"
	       "\n"
	       "options:\n"
	       "  -l, --level LEVEL    pe, kp, lp, model (MODEL and ANALYSIS_MODEL) or event\n"
	       "  -o, --output FILE    the CSV file ('-' for standard output); written to\n"
	       "                       a temporary file next to it, then renamed\n"
	       "  -f, --force          replace FILE when it exists\n"
	       "  --sort ORDER         file (default: each file's order, files merged by\n"
	       "                       real time), virtual or real (stable sorts)\n"
	       "  --sort-budget SIZE   memory of the sort before it spills sorted runs to\n"
	       "                       a temporary file in $TMPDIR (default 32M)\n"
	       "  --stream GLOB        only the streams whose path matches ('gvt/*')\n"
	       "  --ross-model-schema SPEC, --ross-clock-rate HZ, --ross-kind KIND,\n"
	       "  --resync, --format NAME   as for every command (docs/ross.md)\n"
	       "  -h, --help           this text\n"
	       "\n"
	       "example:\n"
	       "  weft table --level pe --sort virtual -o pe.csv run/\n");
}

/* ---- Settings ------------------------------------------------------------------ */

typedef enum table_order { ORDER_FILE = 0, ORDER_VIRTUAL, ORDER_REAL } table_order;

typedef struct table_settings {
	cli_common common;
	const char *level;
	const char *output;
	const char *stream_pattern;
	table_order order;
	int force;
	uint64_t sort_budget;
} table_settings;

/* A made-up record of a layout: its code and fixed size (docs/ross.md). */
typedef struct layout_probe {
	const char *code;
	uint32_t payload_size;
} layout_probe;

/* A level: the codes it selects and the layouts of its records. */
typedef struct level_def {
	const char *name;
	const char *code_pattern;
	layout_probe probes[2];
	size_t probe_count;
} level_def;

static const level_def levels[] = {
	{ "pe", "PE", { { "PE", 128 } }, 1 },
	{ "kp", "KP", { { "KP", 68 } }, 1 },
	{ "lp", "LP", { { "LP", 72 }, { "LP", 60 } }, 2 },
	{ "model", "*MODEL", { { "MODEL", 48 }, { "ANALYSIS_MODEL", 48 } }, 2 },
	{ "event", "EVENT", { { "EVENT", 24 } }, 1 },
};

/* The level named `name`, or NULL. */
static const level_def *find_level(const char *name)
{
	for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
		if (strcmp(levels[i].name, name) == 0)
			return &levels[i];
	return NULL;
}

/* One option of `weft table`; -1 after a message. */
static int table_option(table_settings *s, int id, const char *value)
{
	switch (id) {
	case OPT_LEVEL:
		s->level = value;
		return find_level(value) != NULL ? 0 :
		       (cli_usage_error("table", "unknown level '%s' (pe, kp, lp, model, event)",
					value), -1);
	case OPT_OUTPUT:
		s->output = value;
		return 0;
	case OPT_SORT:
		s->order = strcmp(value, "virtual") == 0 ? ORDER_VIRTUAL :
			   strcmp(value, "real") == 0 ? ORDER_REAL : ORDER_FILE;
		return s->order != ORDER_FILE || strcmp(value, "file") == 0 ? 0 :
		       (cli_usage_error("table", "unknown order '%s' (file, virtual, real)", value), -1);
	case OPT_FORCE:
		s->force = 1;
		return 0;
	case OPT_STREAM:
		s->stream_pattern = value;
		return 0;
	case OPT_SORT_BUDGET:
		return cli_parse_size(value, &s->sort_budget) == 0 && s->sort_budget > 0 ? 0 :
		       (cli_usage_error("table", "invalid size '%s' (e.g. 64M)", value), -1);
	default:
		return cli_common_option(&s->common, "table", id, value) == 1 ? 0 : -1;
	}
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

/* What a made-up record taught about one code's model data. */
typedef struct probe_result {
	const char *code;
	uint32_t payload_size;
	uint32_t section_size; /* bytes the model schema decodes; 0 = none */
} probe_result;

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
	table_order order;
	column *cols;
	size_t col_count;
	probe_result probes[2];
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
static int add_column(table_state *t, const weft_field *f, int from_model_data)
{
	for (size_t i = 0; i < t->col_count; i++)
		if (cli_field_is(f, t->cols[i].name))
			return 0;
	if (cli_field_is(f, "virtual_time") || cli_field_is(f, "real_time"))
		return 0; /* they are common columns */
	column *bigger = realloc(t->cols, (t->col_count + 1) * sizeof *bigger);
	if (bigger == NULL)
		return -1;
	t->cols = bigger;
	char *name = malloc(f->name_len + 1u);
	if (name == NULL)
		return -1;
	memcpy(name, f->name, f->name_len);
	name[f->name_len] = '\0';
	t->cols[t->col_count++] = (column){ name, from_model_data };
	return 0;
}

/*
 * Decodes a made-up record of a layout twice, with model data of zeros
 * (`zeros`) and of 0x5a bytes (`fives`), both `data_size` bytes (one byte
 * more than any schema section), into a and b. Returns the field count
 * of the first decode, or < 0.
 */
static int decode_probe(table_state *t, const layout_probe *p, const uint8_t *zeros,
			const uint8_t *fives, size_t data_size, weft_field *a, weft_field *b, int cap)
{
	uint8_t payload[128];
	weft_event ev;
	memset(payload, 0, sizeof payload);
	memset(&ev, 0, sizeof ev);
	ev.code = p->code;
	ev.code_len = (uint32_t)strlen(p->code);
	ev.payload = payload;
	ev.payload_size = p->payload_size;
	ev.data = zeros;
	ev.data_size = data_size;
	ev.depth = -1;
	ev.parent = -1;
	int n = weft_event_fields(t->trace, &ev, a, (size_t)cap);
	ev.data = fives;
	int m = weft_event_fields(t->trace, &ev, b, (size_t)cap);
	if (n < 0 || m != n || n > cap)
		return n < 0 ? n : WEFT_EFORMAT;
	return n;
}

/* 1 when two decodes of a field differ: it comes from the model data. */
static int field_differs(const weft_field *a, const weft_field *b, const uint8_t *data,
			 size_t data_size)
{
	if (a->type == WEFT_TYPE_BYTES || a->type == WEFT_TYPE_STR)
		return (const uint8_t *)a->v.s.ptr >= data &&
		       (const uint8_t *)a->v.s.ptr <= data + data_size;
	return a->v.u != b->v.u; /* the 8 bytes of any scalar */
}

/* Bytes of the probes' model data: one more than any schema section. */
#define PROBE_DATA_SIZE ((1u << 20) + 1)

/*
 * The columns of a level: the fixed fields of its layouts, then the
 * model data fields, each name once, in order of first appearance.
 */
static int build_columns(table_state *t)
{
	/*
	 * The probes' model data, made once per process: every layout, both
	 * passes and every later table share them (a fuzz target runs the
	 * command thousands of times; 2 MiB filled at each call was most of
	 * its time). The zeros stay in untouched memory.
	 */
	static const uint8_t data[PROBE_DATA_SIZE];
	static uint8_t fives[PROBE_DATA_SIZE];
	size_t data_size = PROBE_DATA_SIZE;
	if (fives[0] != 0x5a)
		memset(fives, 0x5a, sizeof fives);
	weft_field *a = calloc(2 * MAX_FIELDS, sizeof *a);
	int rc = a != NULL ? 0 : WEFT_ENOMEM;
	for (int pass = 0; rc == 0 && pass < 2; pass++) {
		for (size_t i = 0; rc == 0 && i < t->level->probe_count; i++) {
			const layout_probe *p = &t->level->probes[i];
			int n = decode_probe(t, p, data, fives, data_size, a, a + MAX_FIELDS,
					     MAX_FIELDS);
			if (n < 0) {
				rc = n;
				break;
			}
			t->probes[i] = (probe_result){ p->code, p->payload_size, 0 };
			for (int k = 0; rc == 0 && k < n; k++) {
				int model = field_differs(&a[k], &a[MAX_FIELDS + k], data, data_size);
				if (cli_field_is(&a[k], "rest"))
					t->probes[i].section_size =
						(uint32_t)((const uint8_t *)a[k].v.s.ptr - data);
				if (model == pass && add_column(t, &a[k], model) < 0)
					rc = WEFT_ENOMEM;
			}
		}
	}
	free(a);
	return rc;
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
		if (cli_field_is(f, t->cols[i].name))
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
		if (cli_field_is(&t->fields[k], "virtual_time") ||
		    (m->vt_field < 0 && cli_field_is(&t->fields[k], "virtual_recv_time")))
			m->vt_field = k;
		if (cli_field_is(&t->fields[k], "real_time"))
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
	uint32_t section = 0;
	for (size_t i = 0; i < t->level->probe_count; i++)
		if (strlen(t->probes[i].code) == ev->code_len &&
		    memcmp(t->probes[i].code, ev->code, ev->code_len) == 0)
			section = t->probes[i].section_size;
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
	int k = t->order == ORDER_VIRTUAL ? m->vt_field : m->rt_field;
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
	if (n > MAX_FIELDS) {
		fprintf(stderr, "weft table: %s: byte %" PRIu64 ": expected at most %d fields, "
			"found %d\n", weft_trace_stream(t->trace, ev->stream)->file, ev->offset,
			MAX_FIELDS, n);
		return WEFT_EUNSUPPORTED;
	}
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

/* ---- The command --------------------------------------------------------------------- */

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

/* Every record of the level through one merged cursor. */
static int read_records(table_state *t, const table_settings *s)
{
	weft_filter filter;
	weft_cursor *cursor;
	const weft_event *ev;
	memset(&filter, 0, sizeof filter);
	filter.code_pattern = t->level->code_pattern;
	filter.stream_pattern = s->stream_pattern;
	int rc = weft_cursor_create(t->trace, &filter, &cursor);
	if (rc < 0)
		return rc;
	while ((rc = weft_cursor_next(cursor, &ev)) == 1)
		if ((rc = table_record(t, ev)) != 0)
			break;
	weft_cursor_free(cursor);
	return rc;
}

/* Header, rows (sorted when asked), flush; 0 or a WEFT_E* code. */
static int write_table(table_state *t, const table_settings *s, int fd)
{
	int rc = 0;
	weft__bg_writer_start(&t->writer, fd);
	t->writing = 1;
	if (t->order != ORDER_FILE)
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

/* A failure while writing: the library message, or the generic one. */
static int report_failure(int rc)
{
	if (rc == WEFT_EUNSUPPORTED)
		return CLI_EXIT_FAILURE; /* already said */
	return cli_library_error("table", "cannot write the table", rc);
}

/* Opens the run, writes the table into the output file, reports. */
static int run_table(table_settings *s)
{
	table_state t;
	cli_outfile out;
	memset(&t, 0, sizeof t);
	t.level = find_level(s->level);
	t.order = s->order;
	weft__csv_row_init(&t.row);
	int exit_code = cli_open_trace(&s->common, "table", &t.trace);
	if (exit_code == CLI_EXIT_OK)
		exit_code = cli_ross_require(t.trace, "table");
	if (exit_code == CLI_EXIT_OK)
		exit_code = cli_outfile_open(&out, "table", s->output, s->force);
	if (exit_code == CLI_EXIT_OK) {
		int rc = write_table(&t, s, out.fd);
		if (rc != 0) {
			exit_code = report_failure(rc);
			cli_outfile_abort(&out);
		} else {
			exit_code = cli_outfile_commit(&out);
		}
	}
	if (exit_code == CLI_EXIT_OK && t.rows == 0)
		fprintf(stderr, "weft table: no %s records%s\n", s->level,
			s->stream_pattern ? " in the selected streams" : "");
	if (t.short_data > 0)
		fprintf(stderr, "weft table: %" PRIu64 " records have less model data than the "
			"model schema: their model columns are empty\n", t.short_data);
	if (t.trace != NULL && cli_print_diags_from(t.trace, "table", 0) &&
	    exit_code == CLI_EXIT_OK)
		exit_code = CLI_EXIT_PROBLEMS; /* the table lacks what could not be read */
	table_state_free(&t);
	weft_trace_free(t.trace);
	return exit_code;
}

/* Entry of `weft table`: options, then the table. */
int cli_cmd_table(int argc, char **argv)
{
	cli_parser parser;
	table_settings s;
	const char *value;
	int id;

	memset(&s, 0, sizeof s);
	cli_common_init(&s.common);
	cli_parser_init(&parser, "table", argc, argv, table_options);
	while ((id = cli_next_option(&parser, &value)) != 0) {
		if (id < 0)
			return CLI_EXIT_FAILURE;
		if (id == CLI_OPT_HELP) {
			print_table_help();
			return CLI_EXIT_OK;
		}
		if (table_option(&s, id, value) < 0)
			return CLI_EXIT_FAILURE;
	}
	if (cli_take_trace_path(&s.common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	if (s.level == NULL)
		return cli_usage_error("table", "missing --level (pe, kp, lp, model, event)");
	if (s.output == NULL)
		return cli_usage_error("table", "missing -o FILE.csv ('-' for standard output)");
	return run_table(&s);
}
