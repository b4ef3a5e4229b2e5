/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_parse.c - the main file and archive files of a
 * Pallas trace: settings, definitions, location groups, locations and
 * metadata, read through a reader that checks every length against the
 * bytes left before using it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/pallas/pallas_internal.h"

/* ---- Bounded reader ------------------------------------------------------------ */

void weft__pallas_in_init(pallas_in *in, const uint8_t *data, size_t size,
			  const char *file)
{
	in->base = in->p = data;
	in->end = data + size;
	in->file = file;
}

/*
 * The error of a read that would go past the end. The readers below set their output
 * (0 or NULL) before returning it, so that the compiler, which cannot see
 * that the status is negative, knows no caller reads an undefined value.
 */
static int in_short(const pallas_in *in, uint64_t need, const char *what)
{
	return weft__error(WEFT_ETRUNCATED, in->file, weft__pallas_in_offset(in),
			   "expected %s (%llu bytes), but only %llu bytes are left",
			   what, (unsigned long long)need,
			   (unsigned long long)weft__pallas_in_left(in));
}

int weft__pallas_in_bytes(pallas_in *in, uint64_t n, const uint8_t **v,
			  const char *what)
{
	if (n > weft__pallas_in_left(in)) {
		*v = NULL;
		return in_short(in, n, what);
	}
	*v = in->p;
	in->p += n;
	return 0;
}

int weft__pallas_in_u8(pallas_in *in, uint8_t *v, const char *what)
{
	if (weft__pallas_in_left(in) < 1) {
		*v = 0;
		return in_short(in, 1, what);
	}
	*v = *in->p++;
	return 0;
}

int weft__pallas_in_u16(pallas_in *in, uint16_t *v, const char *what)
{
	if (weft__pallas_in_left(in) < 2) {
		*v = 0;
		return in_short(in, 2, what);
	}
	memcpy(v, in->p, 2);
	in->p += 2;
	return 0;
}

int weft__pallas_in_u32(pallas_in *in, uint32_t *v, const char *what)
{
	if (weft__pallas_in_left(in) < 4) {
		*v = 0;
		return in_short(in, 4, what);
	}
	*v = weft__pallas_le32(in->p);
	in->p += 4;
	return 0;
}

int weft__pallas_in_u64(pallas_in *in, uint64_t *v, const char *what)
{
	if (weft__pallas_in_left(in) < 8) {
		*v = 0;
		return in_short(in, 8, what);
	}
	*v = weft__pallas_le64(in->p);
	in->p += 8;
	return 0;
}

int weft__pallas_in_count(pallas_in *in, uint64_t min_item_size,
			  uint64_t *n, const char *what)
{
	uint64_t at = weft__pallas_in_offset(in);
	int rc = weft__pallas_in_u64(in, n, what);
	if (rc < 0)
		return rc;
	uint64_t left = weft__pallas_in_left(in);
	if (min_item_size > 0 && *n > left / min_item_size)
		return weft__error(WEFT_EFORMAT, in->file, at,
				   "%s: expected at most %llu items of at least %llu "
				   "bytes in the %llu bytes left, found %llu", what,
				   (unsigned long long)(left / min_item_size),
				   (unsigned long long)min_item_size,
				   (unsigned long long)left, (unsigned long long)*n);
	return 0;
}

/*
 * Reads a whole file into memory, refusing files above `max_size` (they
 * would not be Pallas definitions or grammar of any sane size).
 */
int weft__pallas_read_file(const char *path, const char *name,
			   uint64_t max_size, uint8_t **data, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return weft__error_errno(name, "cannot open");
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return weft__error(WEFT_EFORMAT, name, WEFT_NO_OFFSET,
				   "expected a regular file");
	}
	if ((uint64_t)st.st_size > max_size) {
		close(fd);
		return weft__error(WEFT_EUNSUPPORTED, name, WEFT_NO_OFFSET,
				   "file of %llu bytes is larger than the %llu bytes "
				   "accepted for this part of a Pallas trace",
				   (unsigned long long)st.st_size,
				   (unsigned long long)max_size);
	}
	size_t n = (size_t)st.st_size;
	uint8_t *buf = malloc(n ? n : 1);
	if (buf == NULL) {
		close(fd);
		return weft__error(WEFT_ENOMEM, name, WEFT_NO_OFFSET, "out of memory");
	}
	int64_t got = weft__read_full(fd, buf, n, 0);
	if (got < 0 || (uint64_t)got < n) {
		free(buf);
		close(fd);
		errno = got < 0 ? (int)-got : errno;
		return got < 0 ? weft__error_errno(name, "cannot read")
			       : weft__error(WEFT_ETRUNCATED, name, (uint64_t)got,
					     "file shrank while being read");
	}
	close(fd);
	*data = buf;
	*size = n;
	return 0;
}

/* ---- Settings -------------------------------------------------------------------- */

int weft__pallas_parse_settings(pallas_in *in, weft_pallas_settings *s)
{
	uint32_t u32;
	int rc;
	if ((rc = weft__pallas_in_u32(in, &u32, "the compression setting")) < 0)
		return rc;
	s->compression = (int32_t)u32;
	if ((rc = weft__pallas_in_u32(in, &u32, "the encoding setting")) < 0)
		return rc;
	s->encoding = (int32_t)u32;
	if ((rc = weft__pallas_in_u64(in, &s->zstd_level, "the zstd level")) < 0)
		return rc;
	if ((rc = weft__pallas_in_u32(in, &u32, "the loop-finding setting")) < 0)
		return rc;
	s->loop_finding = (int32_t)u32;
	if ((rc = weft__pallas_in_u64(in, &s->max_loop_length,
				      "the maximum loop length")) < 0)
		return rc;
	if ((rc = weft__pallas_in_u32(in, &u32, "the timestamp storage")) < 0)
		return rc;
	s->timestamp_storage = (int32_t)u32;
	return 0;
}

const char *weft__pallas_compression_name(int32_t c)
{
	static const char *const names[] = { "None", "ZSTD", "Histogram", "SZ",
					     "ZFP", "ZSTD_Histogram" };
	return c >= 0 && c < 6 ? names[c] : "unknown";
}

const char *weft__pallas_encoding_name(int32_t e)
{
	static const char *const names[] = { "None", "Masking", "LeadingZeroes" };
	return e >= 0 && e < 3 ? names[e] : "unknown";
}

const char *weft__pallas_loop_finding_name(int32_t l)
{
	static const char *const names[] = { "None", "Basic", "BasicTruncated" };
	return l >= 0 && l < 3 ? names[l] : "unknown";
}

const char *weft__pallas_timestamp_storage_name(int32_t t)
{
	static const char *const names[] = { "None", "Delta", "Timestamp" };
	return t >= 0 && t < 3 ? names[t] : "unknown";
}

/* ---- Definitions ----------------------------------------------------------------- */

/* Sorting by reference, for binary search. */
#define DEFINE_REF_SORT(type)                                                      \
	static int cmp_##type(const void *a, const void *b)                        \
	{                                                                          \
		const type *x = a, *y = b;                                         \
		return x->ref < y->ref ? -1 : x->ref > y->ref;                     \
	}
DEFINE_REF_SORT(pallas_string)
DEFINE_REF_SORT(pallas_region)
DEFINE_REF_SORT(pallas_attribute)
DEFINE_REF_SORT(pallas_comm)

/*
 * Strings: u64 n, then u32 ref | i32 length with the NUL | bytes. A
 * string without its NUL is refused (its text could not be used as is).
 */
static int parse_strings(pallas_in *in, pallas_defs *d)
{
	uint64_t n;
	int rc = weft__pallas_in_count(in, 8, &n, "the string count");
	if (rc < 0)
		return rc;
	d->strings = calloc(n ? n : 1, sizeof *d->strings);
	if (d->strings == NULL)
		return weft__error(WEFT_ENOMEM, in->file, WEFT_NO_OFFSET, "out of memory");
	for (uint64_t i = 0; i < n; i++) {
		pallas_string *s = &d->strings[i];
		uint32_t len;
		const uint8_t *bytes;
		if ((rc = weft__pallas_in_u32(in, &s->ref, "a string reference")) < 0 ||
		    (rc = weft__pallas_in_u32(in, &len, "a string length")) < 0)
			return rc;
		uint64_t at = weft__pallas_in_offset(in);
		if ((int32_t)len <= 0)
			return weft__error(WEFT_EFORMAT, in->file, at - 4,
					   "string %u: length %d, expected at least 1 "
					   "(the NUL)", s->ref, (int32_t)len);
		if ((rc = weft__pallas_in_bytes(in, len, &bytes, "string bytes")) < 0)
			return rc;
		if (bytes[len - 1] != 0 || memchr(bytes, 0, len - 1) != NULL)
			return weft__error(WEFT_EFORMAT, in->file, at,
					   "string %u: expected %u bytes ending with "
					   "its only NUL", s->ref, len);
		s->len = len - 1;
		s->text = (const char *)bytes;
		d->string_count++;
	}
	qsort(d->strings, d->string_count, sizeof *d->strings, cmp_pallas_string);
	return 0;
}

static int parse_regions(pallas_in *in, pallas_defs *d)
{
	uint64_t n;
	int rc = weft__pallas_in_count(in, 8, &n, "the region count");
	if (rc < 0)
		return rc;
	d->regions = calloc(n ? n : 1, sizeof *d->regions);
	if (d->regions == NULL)
		return weft__error(WEFT_ENOMEM, in->file, WEFT_NO_OFFSET, "out of memory");
	for (uint64_t i = 0; i < n; i++) {
		pallas_region *r = &d->regions[i];
		if ((rc = weft__pallas_in_u32(in, &r->ref, "a region reference")) < 0 ||
		    (rc = weft__pallas_in_u32(in, &r->name, "a region name")) < 0)
			return rc;
		d->region_count++;
	}
	qsort(d->regions, d->region_count, sizeof *d->regions, cmp_pallas_region);
	return 0;
}

/* Attributes: 16 bytes each, u32 ref | name | description | u8 type | pad. */
static int parse_attributes(pallas_in *in, pallas_defs *d)
{
	uint64_t n;
	int rc = weft__pallas_in_count(in, 16, &n, "the attribute count");
	if (rc < 0)
		return rc;
	d->attributes = calloc(n ? n : 1, sizeof *d->attributes);
	if (d->attributes == NULL)
		return weft__error(WEFT_ENOMEM, in->file, WEFT_NO_OFFSET, "out of memory");
	for (uint64_t i = 0; i < n; i++) {
		pallas_attribute *a = &d->attributes[i];
		const uint8_t *b;
		if ((rc = weft__pallas_in_bytes(in, 16, &b, "an attribute")) < 0)
			return rc;
		a->ref = weft__pallas_le32(b);
		a->name = weft__pallas_le32(b + 4);
		a->description = weft__pallas_le32(b + 8);
		a->type = b[12];
		d->attribute_count++;
	}
	qsort(d->attributes, d->attribute_count, sizeof *d->attributes,
	      cmp_pallas_attribute);
	return 0;
}

/* Groups: u32 ref | name | i32 type | paradigm | u32 count | members. */
static int parse_groups(pallas_in *in, pallas_defs *d)
{
	uint64_t n;
	int rc = weft__pallas_in_count(in, 20, &n, "the group count");
	if (rc < 0)
		return rc;
	d->groups = calloc(n ? n : 1, sizeof *d->groups);
	if (d->groups == NULL)
		return weft__error(WEFT_ENOMEM, in->file, WEFT_NO_OFFSET, "out of memory");
	for (uint64_t i = 0; i < n; i++) {
		pallas_group *g = &d->groups[i];
		uint32_t type, paradigm;
		if ((rc = weft__pallas_in_u32(in, &g->ref, "a group reference")) < 0 ||
		    (rc = weft__pallas_in_u32(in, &g->name, "a group name")) < 0 ||
		    (rc = weft__pallas_in_u32(in, &type, "a group type")) < 0 ||
		    (rc = weft__pallas_in_u32(in, &paradigm, "a group paradigm")) < 0 ||
		    (rc = weft__pallas_in_u32(in, &g->member_count,
					      "a group member count")) < 0 ||
		    (rc = weft__pallas_in_bytes(in, (uint64_t)g->member_count * 4,
						&g->members, "group members")) < 0)
			return rc;
		g->type = (int32_t)type;
		g->paradigm = (int32_t)paradigm;
		d->group_count++;
	}
	return 0;
}

static int parse_comms(pallas_in *in, pallas_defs *d)
{
	uint64_t n;
	int rc = weft__pallas_in_count(in, 16, &n, "the comm count");
	if (rc < 0)
		return rc;
	d->comms = calloc(n ? n : 1, sizeof *d->comms);
	if (d->comms == NULL)
		return weft__error(WEFT_ENOMEM, in->file, WEFT_NO_OFFSET, "out of memory");
	for (uint64_t i = 0; i < n; i++) {
		pallas_comm *c = &d->comms[i];
		const uint8_t *b;
		if ((rc = weft__pallas_in_bytes(in, 16, &b, "a comm")) < 0)
			return rc;
		c->ref = weft__pallas_le32(b);
		c->name = weft__pallas_le32(b + 4);
		c->group = weft__pallas_le32(b + 8);
		c->parent = weft__pallas_le32(b + 12);
		d->comm_count++;
	}
	qsort(d->comms, d->comm_count, sizeof *d->comms, cmp_pallas_comm);
	return 0;
}

/* Location groups and locations: u64 n, then u32 id | name | parent. */
static int parse_locations(pallas_in *in, pallas_location **out, size_t *count,
			   const char *what)
{
	uint64_t n;
	int rc = weft__pallas_in_count(in, 12, &n, what);
	if (rc < 0)
		return rc;
	*out = calloc(n ? n : 1, sizeof **out);
	if (*out == NULL)
		return weft__error(WEFT_ENOMEM, in->file, WEFT_NO_OFFSET, "out of memory");
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *b;
		(*out)[i].offset = weft__pallas_in_offset(in);
		if ((rc = weft__pallas_in_bytes(in, 12, &b, what)) < 0)
			return rc;
		(*out)[i].id = weft__pallas_le32(b);
		(*out)[i].name = weft__pallas_le32(b + 4);
		(*out)[i].parent = weft__pallas_le32(b + 8);
		(*count)++;
	}
	return 0;
}

/* One length-prefixed metadata text; it must end with its NUL. */
static int parse_meta_text(pallas_in *in, const char **text, uint64_t *len,
			   const char *what)
{
	uint64_t n;
	const uint8_t *b;
	int rc = weft__pallas_in_u64(in, &n, what);
	if (rc < 0)
		return rc;
	uint64_t at = weft__pallas_in_offset(in);
	if ((rc = weft__pallas_in_bytes(in, n, &b, what)) < 0)
		return rc;
	if (n == 0 || b[n - 1] != 0)
		return weft__error(WEFT_EFORMAT, in->file, at,
				   "%s: expected %llu bytes ending with a NUL", what,
				   (unsigned long long)n);
	*text = (const char *)b;
	*len = strlen(*text);
	return 0;
}

static int parse_metadata(pallas_in *in, pallas_defs *d)
{
	uint64_t n;
	int rc = weft__pallas_in_count(in, 18, &n, "the metadata count");
	if (rc < 0)
		return rc;
	d->metadata = calloc(n ? n : 1, sizeof *d->metadata);
	if (d->metadata == NULL)
		return weft__error(WEFT_ENOMEM, in->file, WEFT_NO_OFFSET, "out of memory");
	for (uint64_t i = 0; i < n; i++) {
		pallas_metadata_item *m = &d->metadata[i];
		if ((rc = parse_meta_text(in, &m->key, &m->key_len, "a metadata key")) < 0 ||
		    (rc = parse_meta_text(in, &m->value, &m->value_len,
					  "a metadata value")) < 0)
			return rc;
		d->metadata_count++;
	}
	return 0;
}

int weft__pallas_parse_defs(pallas_in *in, pallas_defs *d)
{
	int rc;
	if ((rc = parse_strings(in, d)) < 0 || (rc = parse_regions(in, d)) < 0 ||
	    (rc = parse_attributes(in, d)) < 0 || (rc = parse_groups(in, d)) < 0 ||
	    (rc = parse_comms(in, d)) < 0 ||
	    (rc = parse_locations(in, &d->location_groups, &d->location_group_count,
				  "the location group count")) < 0 ||
	    (rc = parse_locations(in, &d->locations, &d->location_count,
				  "the location count")) < 0 ||
	    (rc = parse_metadata(in, d)) < 0)
		return rc;
	return 0;
}

void weft__pallas_defs_free(pallas_defs *d)
{
	if (d == NULL)
		return;
	free(d->strings);
	free(d->regions);
	free(d->attributes);
	free(d->groups);
	free(d->comms);
	free(d->location_groups);
	free(d->locations);
	free(d->metadata);
	memset(d, 0, sizeof *d);
}

/* Binary search for reference `ref` in an array sorted by reference. */
#define DEFINE_FIND(fn, type, array, count)                                        \
	const type *fn(const pallas_defs *d, uint32_t ref)                         \
	{                                                                          \
		size_t lo = 0, hi = d->count;                                      \
		while (lo < hi) {                                                  \
			size_t mid = lo + (hi - lo) / 2;                           \
			if (d->array[mid].ref <= ref)                              \
				lo = mid + 1;                                      \
			else                                                       \
				hi = mid;                                          \
		}                                                                  \
		return lo > 0 && d->array[lo - 1].ref == ref ? &d->array[lo - 1]   \
							     : NULL;               \
	}
DEFINE_FIND(weft__pallas_find_string, pallas_string, strings, string_count)
DEFINE_FIND(weft__pallas_find_region, pallas_region, regions, region_count)
DEFINE_FIND(weft__pallas_find_attribute, pallas_attribute, attributes,
	    attribute_count)
DEFINE_FIND(weft__pallas_find_comm, pallas_comm, comms, comm_count)
