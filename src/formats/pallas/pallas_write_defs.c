/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_write_defs.c - the definitions of the global
 * archive and of each archive (strings, regions, attributes, groups,
 * communicators, location groups, locations, metadata), added under a
 * lock by any thread and written with their archive.
 */
#include <stdlib.h>
#include <string.h>

#include "formats/pallas/pallas_writer_internal.h"

/* ---- Definitions -------------------------------------------------------------------------- */

/* Initialises an empty set of definitions stored in file `owner`. */
int weft__pw_defs_init(struct weft_pallas_defs *d, const char *owner)
{
	memset(d, 0, sizeof *d);
	d->owner = owner;
	if (pthread_mutex_init(&d->lock, NULL) != 0)
		return weft__error(WEFT_ENOMEM, owner, WEFT_NO_OFFSET, "cannot create a mutex");
	return 0;
}

/* Releases definitions and what they own. */
void weft__pw_defs_free(struct weft_pallas_defs *d)
{
	for (size_t i = 0; i < d->nstrings; i++)
		free(d->strings[i].str);
	for (size_t i = 0; i < d->ngroups; i++)
		free(d->groups[i].members);
	for (size_t i = 0; i < d->nmeta; i++)
		free(d->meta[i].key), free(d->meta[i].value);
	free(d->strings), free(d->regions), free(d->attrs), free(d->groups);
	free(d->comms), free(d->lgs), free(d->locs), free(d->meta);
	pthread_mutex_destroy(&d->lock);
	memset(d, 0, sizeof *d);
}

/*
 * Position of `ref` in an array sorted by the u32 that starts each
 * element (Pallas keeps definitions in maps): *found says if it is there.
 */
static size_t sorted_slot(const void *array, size_t n, size_t size, uint32_t ref, int *found)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t key;
		memcpy(&key, (const uint8_t *)array + mid * size, sizeof key);
		if (key < ref)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t key = 0;
	if (lo < n)
		memcpy(&key, (const uint8_t *)array + lo * size, sizeof key);
	*found = lo < n && key == ref;
	return lo;
}

/*
 * Puts `elem` (starting with its u32 ref) in its sorted place, replacing
 * an element of the same ref (whose old copy goes to *old when given).
 */
static int sorted_put(void **array, size_t *n, size_t *cap, size_t size, const void *elem,
		      void *old, int *replaced)
{
	uint32_t ref;
	int found;
	memcpy(&ref, elem, sizeof ref);
	size_t i = sorted_slot(*array, *n, size, ref, &found);
	uint8_t *base;
	if (!found) {
		if (weft__array_grow(array, cap, *n + 1, size) < 0)
			return WEFT_ENOMEM;
		base = *array;
		memmove(base + (i + 1) * size, base + i * size, (*n - i) * size);
		(*n)++;
	} else {
		base = *array;
		if (old != NULL)
			memcpy(old, base + i * size, size);
	}
	memcpy(base + i * size, elem, size);
	if (replaced != NULL)
		*replaced = found;
	return 0;
}

/* Locks `d` after checking it; the error names the call. */
static int defs_lock(struct weft_pallas_defs *d, const char *what)
{
	if (d == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "%s: NULL definitions", what);
	pthread_mutex_lock(&d->lock);
	return 0;
}

/* Unlocks and turns an internal ENOMEM into a message. */
static int defs_unlock(struct weft_pallas_defs *d, int rc, const char *what)
{
	pthread_mutex_unlock(&d->lock);
	if (rc == WEFT_ENOMEM)
		return weft__error(rc, d->owner, WEFT_NO_OFFSET, "%s: out of memory", what);
	return rc;
}

/* Puts string `ref` (lock held): WEFT_EINVAL without a message, or ENOMEM. */
static int put_string(struct weft_pallas_defs *d, uint32_t ref, const char *str)
{
	if (str == NULL || strlen(str) >= (size_t)INT32_MAX)
		return WEFT_EINVAL;
	pw_string s = { ref, (int32_t)(strlen(str) + 1), strdup(str) }, old;
	int replaced = 0;
	int rc = s.str == NULL ? WEFT_ENOMEM :
		 sorted_put((void **)&d->strings, &d->nstrings, &d->strings_cap, sizeof s, &s,
			    &old, &replaced);
	if (rc < 0)
		free(s.str);
	else if (replaced)
		free(old.str);
	return rc;
}

int weft_pallas_add_string(weft_pallas_defs *d, uint32_t ref, const char *str)
{
	int rc = defs_lock(d, "add_string");
	if (rc < 0)
		return rc;
	rc = put_string(d, ref, str);
	if (rc == WEFT_EINVAL) {
		pthread_mutex_unlock(&d->lock);
		return weft__error(rc, d->owner, WEFT_NO_OFFSET,
				   "string %u: NULL or longer than 2^31 - 2 bytes", ref);
	}
	return defs_unlock(d, rc, "add_string");
}

int weft_pallas_register_string(weft_pallas_defs *d, const char *str, uint32_t *ref)
{
	int rc = defs_lock(d, "register_string");
	if (rc < 0)
		return rc;
	uint32_t next = d->nstrings ? d->strings[d->nstrings - 1].ref + 1u : 0;
	if (ref == NULL || (d->nstrings && next == 0)) {
		pthread_mutex_unlock(&d->lock);
		return weft__error(WEFT_EINVAL, d->owner, WEFT_NO_OFFSET, "register_string: %s",
				   ref == NULL ? "NULL ref" : "no string ref left");
	}
	rc = put_string(d, next, str);
	if (rc == WEFT_EINVAL) {
		pthread_mutex_unlock(&d->lock);
		return weft__error(rc, d->owner, WEFT_NO_OFFSET,
				   "register_string: NULL string or longer than 2^31 - 2 bytes");
	}
	if (rc == 0)
		*ref = next;
	return defs_unlock(d, rc, "register_string");
}

int weft_pallas_add_region(weft_pallas_defs *d, uint32_t ref, uint32_t name)
{
	int rc = defs_lock(d, "add_region");
	if (rc < 0)
		return rc;
	pw_region r = { ref, name };
	rc = sorted_put((void **)&d->regions, &d->nregions, &d->regions_cap, sizeof r, &r,
			NULL, NULL);
	return defs_unlock(d, rc, "add_region");
}

int weft_pallas_add_attribute(weft_pallas_defs *d, uint32_t ref, uint32_t name,
			      uint32_t description, int type)
{
	int rc = defs_lock(d, "add_attribute");
	if (rc < 0)
		return rc;
	if (type < WEFT_PALLAS_TYPE_NONE || type > WEFT_PALLAS_TYPE_LOCATION_GROUP) {
		pthread_mutex_unlock(&d->lock);
		return weft__error(WEFT_EINVAL, d->owner, WEFT_NO_OFFSET,
				   "attribute %u: type %d is not 0 to 25", ref, type);
	}
	pw_attribute a = { ref, name, description, (uint8_t)type };
	rc = sorted_put((void **)&d->attrs, &d->nattrs, &d->attrs_cap, sizeof a, &a, NULL, NULL);
	return defs_unlock(d, rc, "add_attribute");
}

int weft_pallas_add_group(weft_pallas_defs *d, uint32_t ref, uint32_t name, int32_t type,
			  int32_t paradigm, const uint32_t *members, uint32_t count)
{
	int rc = defs_lock(d, "add_group");
	if (rc < 0)
		return rc;
	if (count > 0 && members == NULL) {
		pthread_mutex_unlock(&d->lock);
		return weft__error(WEFT_EINVAL, d->owner, WEFT_NO_OFFSET,
				   "group %u: %u members but a NULL array", ref, count);
	}
	pw_group g = { ref, name, type, paradigm, count, malloc((size_t)count * 4 + 1) }, old;
	int replaced = 0;
	if (g.members != NULL && count > 0)
		memcpy(g.members, members, (size_t)count * 4);
	rc = g.members == NULL ? WEFT_ENOMEM :
	     sorted_put((void **)&d->groups, &d->ngroups, &d->groups_cap, sizeof g, &g, &old,
			&replaced);
	if (rc < 0)
		free(g.members);
	else if (replaced)
		free(old.members);
	return defs_unlock(d, rc, "add_group");
}

int weft_pallas_add_comm(weft_pallas_defs *d, uint32_t ref, uint32_t name, uint32_t group,
			 uint32_t parent)
{
	int rc = defs_lock(d, "add_comm");
	if (rc < 0)
		return rc;
	pw_comm c = { ref, name, group, parent };
	rc = sorted_put((void **)&d->comms, &d->ncomms, &d->comms_cap, sizeof c, &c, NULL, NULL);
	return defs_unlock(d, rc, "add_comm");
}

/* Location groups and locations keep their order (Pallas's vectors); an id given again replaces. */
static int put_location(pw_location **array, size_t *n, size_t *cap, pw_location l)
{
	for (size_t i = 0; i < *n; i++) {
		if ((*array)[i].id == l.id) {
			(*array)[i] = l;
			return 0;
		}
	}
	if (weft__array_grow((void **)array, cap, *n + 1, sizeof l) < 0)
		return WEFT_ENOMEM;
	(*array)[(*n)++] = l;
	return 0;
}

int weft_pallas_add_location_group(weft_pallas_defs *d, uint32_t id, uint32_t name,
				   uint32_t parent)
{
	int rc = defs_lock(d, "add_location_group");
	if (rc < 0)
		return rc;
	pw_location l = { id, name, parent };
	rc = put_location(&d->lgs, &d->nlgs, &d->lgs_cap, l);
	return defs_unlock(d, rc, "add_location_group");
}

int weft_pallas_add_location(weft_pallas_defs *d, uint32_t id, uint32_t name,
			     uint32_t parent)
{
	int rc = defs_lock(d, "add_location");
	if (rc < 0)
		return rc;
	pw_location l = { id, name, parent };
	rc = put_location(&d->locs, &d->nlocs, &d->locs_cap, l);
	return defs_unlock(d, rc, "add_location");
}

int weft_pallas_add_metadata(weft_pallas_defs *d, const char *key, const char *value)
{
	int rc = defs_lock(d, "add_metadata");
	if (rc < 0)
		return rc;
	if (key == NULL || value == NULL) {
		pthread_mutex_unlock(&d->lock);
		return weft__error(WEFT_EINVAL, d->owner, WEFT_NO_OFFSET, "add_metadata: NULL key or value");
	}
	size_t i = 0;
	while (i < d->nmeta && strcmp(d->meta[i].key, key) < 0)
		i++;
	char *v = strdup(value), *k = NULL;
	if (v == NULL) {
		rc = WEFT_ENOMEM;
	} else if (i < d->nmeta && strcmp(d->meta[i].key, key) == 0) {
		free(d->meta[i].value);
		d->meta[i].value = v;
	} else if ((k = strdup(key)) == NULL ||
		   weft__array_grow((void **)&d->meta, &d->meta_cap, d->nmeta + 1,
				    sizeof *d->meta) < 0) {
		free(k), free(v);
		rc = WEFT_ENOMEM;
	} else {
		memmove(d->meta + i + 1, d->meta + i, (d->nmeta - i) * sizeof *d->meta);
		d->meta[i] = (pw_meta){ k, v };
		d->nmeta++;
	}
	return defs_unlock(d, rc, "add_metadata");
}
