/* SPDX-License-Identifier: MIT */
/*
 * core/options.c - the options of weft_trace_open(): the format options
 * as key/value texts (weft_open_options_set), checked against the option
 * table of each backend (weft_backend.options), and the typed reads the
 * backends make of them while they open a trace.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

void weft_open_options_init(weft_open_options *options)
{
	memset(options, 0, sizeof *options);
	options->format = WEFT_FORMAT_AUTO;
}

/* The table entry of `key`, of any format, or NULL. */
static const weft_format_option *find_option(const char *key)
{
	for (size_t b = 0; key != NULL && weft__backend_at(b) != NULL; b++) {
		const weft_backend *be = weft__backend_at(b);
		for (size_t i = 0; i < be->option_count; i++)
			if (strcmp(be->options[i].key, key) == 0)
				return &be->options[i];
	}
	return NULL;
}

/* 1 when `value` is one of the '|'-separated words of `choices`. */
static int is_choice(const char *choices, const char *value)
{
	size_t n = strlen(value);
	for (const char *c = choices; *c != '\0';) {
		const char *bar = strchr(c, '|');
		size_t len = bar != NULL ? (size_t)(bar - c) : strlen(c);
		if (len == n && strncmp(c, value, n) == 0)
			return 1;
		c += len + (bar != NULL);
	}
	return 0;
}

/* A boolean's text: 1, 0, or -1 when it is none. */
static int parse_bool(const char *v)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };
	for (size_t i = 0; i < 4; i++) {
		if (strcmp(v, yes[i]) == 0)
			return 1;
		if (strcmp(v, no[i]) == 0)
			return 0;
	}
	return -1;
}

/* An unsigned decimal integer (no sign, no suffix); -1 when it is none. */
static int parse_u64(const char *v, uint64_t *out)
{
	char *end;
	if (v[0] < '0' || v[0] > '9')
		return -1;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*out = (uint64_t)x;
	return 0;
}

/* A rate in Hz: a positive number up to 1e15; -1 when it is none. */
static int parse_rate(const char *v, double *out)
{
	char *end;
	double x = strtod(v, &end);
	if (end == v || *end != '\0' || !(x > 0) || x > 1e15)
		return -1;
	*out = x;
	return 0;
}

/*
 * Checks `value` against the type of option `o`: 0, or WEFT_EINVAL with
 * a message that says what it takes ("unknown ROSS kind 'pe' (gvt, rt,
 * vt, evtrace, model)", "invalid clock rate 'fast' (Hz, e.g. 2.6e9)").
 */
static int check_value(const weft_format_option *o, const char *value)
{
	uint64_t u;
	double d;
	const char *t = o->type;
	if (strchr(t, '|') != NULL) {
		if (is_choice(t, value))
			return 0;
		char list[256];
		size_t n = 0;
		for (const char *c = t; *c != '\0' && n + 3 < sizeof list; c++) {
			if (*c == '|') {
				list[n++] = ',';
				list[n++] = ' ';
			} else {
				list[n++] = *c;
			}
		}
		list[n] = '\0';
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "unknown %s '%s' (%s)",
				   o->what, value, list);
	}
	if ((strcmp(t, "bytes") == 0 || strcmp(t, "count") == 0) && parse_u64(value, &u) < 0)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "invalid %s '%s' (a number: %s)", o->what, value,
				   strcmp(t, "bytes") == 0 ? "bytes" : "how many");
	if (strcmp(t, "rate") == 0 && parse_rate(value, &d) < 0)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "invalid %s '%s' (Hz, e.g. 2.6e9)", o->what, value);
	if (strcmp(t, "bool") == 0 && parse_bool(value) < 0)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "invalid %s '%s' (1 or 0, true or false, yes or no, on or off)",
				   o->what, value);
	if ((strcmp(t, "path") == 0 || strcmp(t, "text") == 0) && value[0] == '\0')
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "empty %s", o->what);
	return 0;
}

int weft_open_options_set(weft_open_options *options, const char *key, const char *value)
{
	if (options == NULL || key == NULL || value == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "weft_open_options_set: NULL argument");
	const weft_format_option *o = find_option(key);
	if (o == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "unknown format option '%s' (weft_format_option_get lists them)",
				   key);
	int rc = check_value(o, value);
	if (rc < 0)
		return rc;
	size_t n = options->format_option_count;
	for (size_t i = 0; i < n && i < WEFT_FORMAT_OPTIONS_MAX; i++)
		if (strcmp(options->format_option_keys[i], key) == 0) {
			options->format_option_values[i] = value;
			return 0;
		}
	if (n >= WEFT_FORMAT_OPTIONS_MAX)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "more than %d format options", WEFT_FORMAT_OPTIONS_MAX);
	options->format_option_keys[n] = o->key; /* the table's: it lives on */
	options->format_option_values[n] = value;
	options->format_option_count = n + 1;
	return 0;
}

const char *weft_open_options_get(const weft_open_options *options, const char *key)
{
	size_t n = options != NULL ? options->format_option_count : 0;
	for (size_t i = 0; key != NULL && i < n && i < WEFT_FORMAT_OPTIONS_MAX; i++)
		if (options->format_option_keys[i] != NULL &&
		    strcmp(options->format_option_keys[i], key) == 0)
			return options->format_option_values[i];
	return NULL;
}

/* The backend of `format`, or NULL (AUTO: none). */
static const weft_backend *backend_of(weft_format format)
{
	for (size_t b = 0; weft__backend_at(b) != NULL; b++)
		if (weft__backend_at(b)->format == format)
			return weft__backend_at(b);
	return NULL;
}

size_t weft_format_option_count(weft_format format)
{
	size_t n = 0;
	for (size_t b = 0; weft__backend_at(b) != NULL; b++)
		if (format == WEFT_FORMAT_AUTO || weft__backend_at(b)->format == format)
			n += weft__backend_at(b)->option_count;
	return n;
}

const weft_format_option *weft_format_option_get(weft_format format, size_t i)
{
	if (format != WEFT_FORMAT_AUTO) {
		const weft_backend *be = backend_of(format);
		return be != NULL && i < be->option_count ? &be->options[i] : NULL;
	}
	for (size_t b = 0; weft__backend_at(b) != NULL; b++) {
		const weft_backend *be = weft__backend_at(b);
		if (i < be->option_count)
			return &be->options[i];
		i -= be->option_count;
	}
	return NULL;
}

/*
 * The format that the options set choose when the format is detected:
 * that of an option with implies_format, else WEFT_FORMAT_AUTO.
 */
weft_format weft__options_implied_format(const weft_open_options *options)
{
	size_t n = options->format_option_count;
	for (size_t i = 0; i < n && i < WEFT_FORMAT_OPTIONS_MAX; i++) {
		const weft_format_option *o = find_option(options->format_option_keys[i]);
		if (o != NULL && o->implies_format)
			for (size_t b = 0; weft__backend_at(b) != NULL; b++)
				if (o >= weft__backend_at(b)->options &&
				    o < weft__backend_at(b)->options + weft__backend_at(b)->option_count)
					return weft__backend_at(b)->format;
	}
	return WEFT_FORMAT_AUTO;
}

int weft__options_check(const weft_open_options *options)
{
	size_t n = options->format_option_count;
	if (n > WEFT_FORMAT_OPTIONS_MAX)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "format_option_count %zu is more than %d", n,
				   WEFT_FORMAT_OPTIONS_MAX);
	for (size_t i = 0; i < n; i++) {
		const char *key = options->format_option_keys[i];
		const char *value = options->format_option_values[i];
		const weft_format_option *o = find_option(key);
		if (o == NULL || value == NULL)
			return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
					   o == NULL ? "unknown format option '%s'"
						     : "format option '%s' without a value",
					   key != NULL ? key : "(null)");
		int rc = check_value(o, value);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * The typed reads of the backends, while they open a trace. Each takes
 * the value set for `key` (or leaves *out as it is and returns 0 when
 * none is); a value that does not parse (the caller filled the arrays
 * without weft_open_options_set) is WEFT_EINVAL.
 */
static const char *checked_value(const weft_open_options *o, const char *key, int *rc)
{
	const char *v = weft_open_options_get(o, key);
	const weft_format_option *opt = find_option(key);
	*rc = 0;
	if (v != NULL && opt != NULL)
		*rc = check_value(opt, v);
	return *rc < 0 ? NULL : v;
}

int weft__option_text(const weft_open_options *o, const char *key, const char **out)
{
	int rc;
	const char *v = checked_value(o, key, &rc);
	if (v != NULL)
		*out = v;
	return rc;
}

int weft__option_u64(const weft_open_options *o, const char *key, uint64_t *out)
{
	int rc;
	const char *v = checked_value(o, key, &rc);
	if (v != NULL)
		parse_u64(v, out);
	return rc;
}

int weft__option_rate(const weft_open_options *o, const char *key, double *out)
{
	int rc;
	const char *v = checked_value(o, key, &rc);
	if (v != NULL)
		parse_rate(v, out);
	return rc;
}

int weft__option_bool(const weft_open_options *o, const char *key, int *out)
{
	int rc;
	const char *v = checked_value(o, key, &rc);
	if (v != NULL)
		*out = parse_bool(v);
	return rc;
}
