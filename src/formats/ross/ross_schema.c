/* SPDX-License-Identifier: MIT */
/*
 * formats/ross/ross_schema.c - the model data schema: a small text that
 * names the layout of the model data of MODEL, ANALYSIS_MODEL and EVENT
 * records, so that weft_event_fields() gives typed fields instead of hex.
 *
 *   schema  := item { sep item }          sep: ',' ';' or a new line
 *   item    := TYPE NAME | 'pad' N | KIND ':' | (empty)
 *   TYPE    := u8 u16 u32 u64 i8 i16 i32 i64 f32 f64
 *   KIND    := MODEL | ANALYSIS_MODEL | EVENT (any case; also model, vt,
 *              evtrace): the items after it describe that kind only
 *   '#' starts a comment up to the end of the line.
 *
 * Items before any KIND apply to every kind that has no section of its
 * own. "@FILE" reads the text from a file (at most 64 KiB). Fields are
 * packed (no alignment padding): `pad N` skips N bytes.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "formats/ross/ross_internal.h"

#define SCHEMA_FILE_MAX (64u << 10)
#define SCHEMA_FIELDS_MAX 256u
#define SCHEMA_NAME_MAX 63u
#define SCHEMA_SECTIONS_MAX 4u /* default + one per model-data class */
#define ALL_CLASSES (-1)

/* Where the parser is, for messages: "line 2, column 7". */
typedef struct schema_parser {
	const char *text;
	size_t pos;
	const char *origin;     /* "model schema" or the file name */
	ross_schemas *out;
	ross_schema *current;   /* section being filled */
	int current_class;      /* its class, or ALL_CLASSES */
} schema_parser;

/* Fails with the line and column of byte `at`. */
static int schema_error(const schema_parser *sp, size_t at, const char *what,
			const char *found, size_t found_len)
{
	size_t line = 1, col = 1;
	for (size_t i = 0; i < at && sp->text[i] != '\0'; i++) {
		if (sp->text[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	if (found[0] == '\0' || found[0] == '\n')
		return weft__error(WEFT_EINVAL, sp->origin, WEFT_NO_OFFSET,
				   "model schema: line %zu, column %zu: expected %s, found the end "
				   "of the %s", line, col, what, found[0] ? "line" : "text");
	if (found_len == 0)
		found_len = 1; /* a separator where a word was expected */
	return weft__error(WEFT_EINVAL, sp->origin, WEFT_NO_OFFSET,
			   "model schema: line %zu, column %zu: expected %s, found '%.*s'",
			   line, col, what, (int)(found_len > 40 ? 40 : found_len), found);
}

/* ---- Lexing ------------------------------------------------------------------- */

/* Skips blanks and comments, not new lines (they separate items). */
static void skip_blanks(schema_parser *sp)
{
	for (;;) {
		char c = sp->text[sp->pos];
		if (c == ' ' || c == '\t' || c == '\r')
			sp->pos++;
		else if (c == '#')
			while (sp->text[sp->pos] != '\0' && sp->text[sp->pos] != '\n')
				sp->pos++;
		else
			return;
	}
}

/* A word: letters, digits and '_'. Sets *len (0 when there is none). */
static const char *next_word(schema_parser *sp, size_t *len)
{
	skip_blanks(sp);
	const char *start = sp->text + sp->pos;
	size_t n = 0;
	while (isalnum((unsigned char)start[n]) || start[n] == '_')
		n++;
	sp->pos += n;
	*len = n;
	return start;
}

/* 1 when the word equals `s` (ignoring case when `nocase`). */
static int word_is(const char *w, size_t len, const char *s, int nocase)
{
	if (strlen(s) != len)
		return 0;
	return nocase ? strncasecmp(w, s, len) == 0 : strncmp(w, s, len) == 0;
}

/* ---- Vocabulary ------------------------------------------------------------------ */

/* The numeric type named by a word (u8 ... f64), or 0. */
static weft_type type_of(const char *w, size_t len)
{
	weft_type t = weft__type_from_name(w, len);

	return t >= WEFT_TYPE_U8 && t <= WEFT_TYPE_F64 ? t : (weft_type)0;
}

/* Bytes of a scalar type in the model data. */
static uint32_t type_size(weft_type t)
{
	switch (t) {
	case WEFT_TYPE_U8: case WEFT_TYPE_I8: return 1;
	case WEFT_TYPE_U16: case WEFT_TYPE_I16: return 2;
	case WEFT_TYPE_U32: case WEFT_TYPE_I32: case WEFT_TYPE_F32: return 4;
	default: return 8;
	}
}

/* The record class a section header names, or -1. */
static int class_of(const char *w, size_t len)
{
	if (word_is(w, len, "MODEL", 1))
		return ROSS_REC_MODEL;
	if (word_is(w, len, "ANALYSIS_MODEL", 1) || word_is(w, len, "vt", 1))
		return ROSS_REC_ANALYSIS;
	if (word_is(w, len, "EVENT", 1) || word_is(w, len, "evtrace", 1))
		return ROSS_REC_EVENT;
	return -1;
}

/*
 * Names a schema field may not take: the fixed fields of the records
 * with model data (a JSON object cannot hold a name twice) and "rest".
 */
static int name_reserved(const char *w, size_t len)
{
	static const char *const names[] = {
		"virtual_time", "real_time", "pe_id", "kp_id", "lp_id", "gvt", "stats_type",
		"model_size", "model_data", "sample_size", "source_lp", "destination_lp",
		"virtual_send_time", "virtual_recv_time", "model_data_size", "rest", NULL
	};
	for (int i = 0; names[i] != NULL; i++)
		if (word_is(w, len, names[i], 0))
			return 1;
	return 0;
}

/* ---- Sections --------------------------------------------------------------------- */

/* Starts a new section for `cls` (or every class); one per class. */
static int begin_section(schema_parser *sp, int cls, size_t at, const char *w, size_t len)
{
	ross_schemas *o = sp->out;
	if (cls >= 0 && o->by_class[cls] != NULL)
		return schema_error(sp, at, "each kind once", w, len);
	if (o->section_count >= SCHEMA_SECTIONS_MAX)
		return schema_error(sp, at, "at most one section per kind", w, len);
	sp->current = &o->sections[o->section_count++];
	sp->current_class = cls;
	if (cls >= 0)
		o->by_class[cls] = sp->current;
	return 0;
}

/* Adds a field (or a pad when name is NULL) to the current section. */
static int add_field(schema_parser *sp, size_t at, weft_type type, uint32_t bytes,
		     const char *name, size_t name_len)
{
	ross_schema *s = sp->current;
	if ((uint64_t)s->size + bytes > ROSS_MAX_MODEL_DATA)
		return schema_error(sp, at, "a layout of at most 1 MiB", name ? name : "pad",
				    name ? name_len : 3);
	if (name == NULL) {
		s->size += bytes;
		return 0;
	}
	if (s->count >= SCHEMA_FIELDS_MAX)
		return schema_error(sp, at, "at most 256 fields per kind", name, name_len);
	for (uint32_t i = 0; i < s->count; i++)
		if (word_is(name, name_len, s->fields[i].name, 0))
			return schema_error(sp, at, "a field name not used before", name, name_len);
	if (s->fields == NULL &&
	    (s->fields = calloc(SCHEMA_FIELDS_MAX, sizeof *s->fields)) == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	ross_schema_field *f = &s->fields[s->count];
	f->name = strndup(name, name_len);
	if (f->name == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	f->type = type;
	f->offset = s->size;
	s->count++;
	s->size += bytes;
	return 0;
}

/* ---- Items ------------------------------------------------------------------------- */

/* "pad N": N bytes skipped. */
static int parse_pad(schema_parser *sp)
{
	size_t len, at;
	skip_blanks(sp);
	at = sp->pos;
	const char *w = next_word(sp, &len);
	char digits[16];
	if (len == 0 || len >= sizeof digits || strspn(w, "0123456789") < len)
		return schema_error(sp, at, "a byte count after 'pad'", w, len);
	memcpy(digits, w, len);
	digits[len] = '\0';
	unsigned long n = strtoul(digits, NULL, 10);
	if (n == 0 || n > ROSS_MAX_MODEL_DATA)
		return schema_error(sp, at, "a byte count of 1 to 1048576", w, len);
	return add_field(sp, at, (weft_type)0, (uint32_t)n, NULL, 0);
}

/* "TYPE NAME": one field. */
static int parse_field(schema_parser *sp, weft_type type)
{
	size_t len, at;
	skip_blanks(sp);
	at = sp->pos;
	const char *w = next_word(sp, &len);
	if (len == 0 || isdigit((unsigned char)w[0]))
		return schema_error(sp, at, "a field name", w, len);
	if (len > SCHEMA_NAME_MAX)
		return schema_error(sp, at, "a field name of at most 63 characters", w, len);
	if (name_reserved(w, len))
		return schema_error(sp, at, "a name that is not a field of the record itself",
				    w, len);
	return add_field(sp, at, type, type_size(type), w, len);
}

/* One item, up to (not including) its separator. */
static int parse_item(schema_parser *sp)
{
	size_t len;
	skip_blanks(sp);
	size_t at = sp->pos;
	const char *w = next_word(sp, &len);
	if (len == 0)
		return 0; /* empty item */
	skip_blanks(sp);
	if (sp->text[sp->pos] == ':') {
		int cls = class_of(w, len);
		if (cls < 0)
			return schema_error(sp, at, "a record kind (MODEL, ANALYSIS_MODEL, EVENT)",
					    w, len);
		sp->pos++;
		int rc = begin_section(sp, cls, at, w, len);
		return rc < 0 ? rc : parse_item(sp);
	}
	if (word_is(w, len, "pad", 0))
		return parse_pad(sp);
	weft_type type = type_of(w, len);
	if (type == 0)
		return schema_error(sp, at, "a type (u8..u64, i8..i64, f32, f64), 'pad N' or "
				    "a kind followed by ':'", w, len);
	return parse_field(sp, type);
}

/* Items and separators up to the end of the text. */
static int parse_text(schema_parser *sp)
{
	for (;;) {
		int rc = parse_item(sp);
		if (rc < 0)
			return rc;
		skip_blanks(sp);
		char c = sp->text[sp->pos];
		if (c == '\0')
			return 0;
		if (c != ',' && c != ';' && c != '\n')
			return schema_error(sp, sp->pos, "',', ';' or a new line",
					    sp->text + sp->pos, 1);
		sp->pos++;
	}
}

/* ---- Entry points ------------------------------------------------------------------- */

/* The text of "@FILE" in a malloc'ed, NUL-terminated buffer. */
static int read_schema_file(const char *path, char **out)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return weft__error_errno(path, "cannot open the model schema file");
	char *buf = malloc(SCHEMA_FILE_MAX + 1);
	if (buf == NULL) {
		fclose(f);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	size_t n = fread(buf, 1, SCHEMA_FILE_MAX + 1, f);
	int failed = ferror(f);
	fclose(f);
	if (failed || n > SCHEMA_FILE_MAX || memchr(buf, '\0', n) != NULL) {
		free(buf);
		return weft__error(WEFT_EINVAL, path, WEFT_NO_OFFSET, failed ?
				   "cannot read the model schema file" :
				   "expected a model schema text of at most 64 KiB");
	}
	buf[n] = '\0';
	*out = buf;
	return 0;
}

/* Unprefixed items describe every class without a section of its own. */
static void apply_default(ross_schemas *out)
{
	for (size_t i = 0; i < out->section_count; i++) {
		if (&out->sections[i] != out->by_class[ROSS_REC_MODEL] &&
		    &out->sections[i] != out->by_class[ROSS_REC_ANALYSIS] &&
		    &out->sections[i] != out->by_class[ROSS_REC_EVENT]) {
			static const ross_class classes[] = { ROSS_REC_MODEL, ROSS_REC_ANALYSIS,
							      ROSS_REC_EVENT };
			for (size_t c = 0; c < 3; c++)
				if (out->by_class[classes[c]] == NULL)
					out->by_class[classes[c]] = &out->sections[i];
		}
	}
}

/* Parses the option text (or @FILE) into per-class sections. */
int weft__ross_schema_compile(const char *spec, ross_schemas *out)
{
	schema_parser sp;
	char *text = NULL;
	memset(out, 0, sizeof *out);
	if (spec == NULL || spec[0] == '\0')
		return 0;
	if (spec[0] == '@') {
		int rc = read_schema_file(spec + 1, &text);
		if (rc < 0)
			return rc;
	}
	memset(&sp, 0, sizeof sp);
	sp.text = text != NULL ? text : spec;
	sp.origin = text != NULL ? spec + 1 : NULL;
	sp.out = out;
	out->sections = calloc(SCHEMA_SECTIONS_MAX, sizeof *out->sections);
	int rc = out->sections == NULL ?
		 weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory") :
		 begin_section(&sp, ALL_CLASSES, 0, "", 0);
	if (rc == 0)
		rc = parse_text(&sp);
	free(text);
	if (rc < 0) {
		weft__ross_schema_free(out);
		return rc;
	}
	apply_default(out);
	/* An empty default section decodes nothing: drop it. */
	for (int c = 0; c < ROSS_REC_COUNT; c++)
		if (out->by_class[c] != NULL && out->by_class[c]->count == 0 &&
		    out->by_class[c]->size == 0)
			out->by_class[c] = NULL;
	return 0;
}

/* Releases the sections and their names. */
void weft__ross_schema_free(ross_schemas *s)
{
	for (size_t i = 0; i < s->section_count; i++) {
		for (uint32_t k = 0; k < s->sections[i].count; k++)
			free(s->sections[i].fields[k].name);
		free(s->sections[i].fields);
	}
	free(s->sections);
	memset(s, 0, sizeof *s);
}
