/* SPDX-License-Identifier: MIT */
/*
 * cli/options.c - option parsing of the subcommands: "--name", "--name
 * VALUE", "--name=VALUE", "-x", options anywhere among the positional
 * arguments, "--" to end the options; plus the common options and the
 * parsing of times with units ("10ms").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* cli_usage_error_as() with a va_list (`program` NULL: "weft"). */
static void usage_verror(const char *program, const char *command, const char *fmt,
			 va_list ap)
{
	if (program == NULL)
		program = "weft";
	fprintf(stderr, "%s %s: ", program, command);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n(see '%s %s --help')\n", program, command);
}

/* Prints "weft CMD: <message>" and returns the usage exit code. */
int cli_usage_error(const char *command, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	usage_verror(NULL, command, fmt, ap);
	va_end(ap);
	return CLI_EXIT_FAILURE;
}

/* The same for another program ("weft-mpi"). */
int cli_usage_error_as(const char *program, const char *command, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	usage_verror(program, command, fmt, ap);
	va_end(ap);
	return CLI_EXIT_FAILURE;
}

/* A usage error met by the parser: said as cli_usage_error() says it,
 * unless the parser is quiet. */
static void parser_error(const cli_parser *p, const char *fmt, ...)
{
	va_list ap;

	if (p->quiet)
		return;
	va_start(ap, fmt);
	usage_verror(p->program, p->command, fmt, ap);
	va_end(ap);
}

/* Starts a parse of argv[1..] (argv[0] is the subcommand name). */
void cli_parser_init(cli_parser *p, const char *command, int argc, char **argv,
		     const cli_option *options)
{
	memset(p, 0, sizeof *p);
	p->command = command;
	p->argc = argc;
	p->argv = argv;
	p->index = 1; /* argv[0] is the command name */
	p->options = options;
}

/* The entry of a long option name (name_len bytes of `name`), or NULL. */
static const cli_option *find_long(const cli_option *options, const char *name,
				   size_t name_len)
{
	for (const cli_option *o = options; o->id != 0; o++)
		if (strlen(o->long_name) == name_len &&
		    strncmp(o->long_name, name, name_len) == 0)
			return o;
	return NULL;
}

/* The entry of a one-letter option, or NULL. */
static const cli_option *find_short(const cli_option *options, char letter)
{
	for (const cli_option *o = options; o->id != 0; o++)
		if (o->short_name != 0 && o->short_name == letter)
			return o;
	return NULL;
}

/* Keeps a positional argument; -1 (message printed) when there are too many. */
static int add_positional(cli_parser *p, const char *arg)
{
	if (p->positional_count >= (int)(sizeof p->positional / sizeof p->positional[0])) {
		parser_error(p, "too many arguments");
		return -1;
	}
	p->positional[p->positional_count++] = arg;
	return 0;
}

/*
 * The value of an option that takes one: the text after '=' when given
 * inline, else the next argument.
 */
static int option_value(cli_parser *p, const cli_option *o, const char *inline_value,
			const char *spelled, const char **value)
{
	if (inline_value != NULL) {
		*value = inline_value;
		return o->id;
	}
	if (p->index >= p->argc) {
		parser_error(p, "option %s needs a value", spelled);
		return -1;
	}
	*value = p->argv[p->index++];
	return o->id;
}

/* Handles "--name" and "--name=value". */
static int parse_long(cli_parser *p, const char *arg, const char **value)
{
	const char *name = arg + 2;
	const char *eq = strchr(name, '=');
	size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
	const cli_option *o = find_long(p->options, name, name_len);

	if (o == NULL) {
		parser_error(p, "unknown option '%s'", arg);
		return -1;
	}
	if (!o->takes_value) {
		if (eq != NULL) {
			parser_error(p, "option --%s takes no value", o->long_name);
			return -1;
		}
		return o->id;
	}
	return option_value(p, o, eq ? eq + 1 : NULL, arg, value);
}

/* Handles "-x" and "-xVALUE" (one letter per argument). */
static int parse_short(cli_parser *p, const char *arg, const char **value)
{
	const cli_option *o = find_short(p->options, arg[1]);

	if (o == NULL) {
		parser_error(p, "unknown option '%s'", arg);
		return -1;
	}
	if (!o->takes_value) {
		if (arg[2] != '\0') {
			parser_error(p, "unknown option '%s'", arg);
			return -1;
		}
		return o->id;
	}
	return option_value(p, o, arg[2] != '\0' ? arg + 2 : NULL, arg, value);
}

/* Next option; positional arguments are collected on the way. */
int cli_next_option(cli_parser *p, const char **value)
{
	*value = NULL;
	while (p->index < p->argc) {
		const char *arg = p->argv[p->index++];
		if (p->options_ended || arg[0] != '-' || arg[1] == '\0') {
			if (add_positional(p, arg) < 0)
				return -1;
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			p->options_ended = 1;
			continue;
		}
		if (arg[1] == '-')
			return parse_long(p, arg, value);
		return parse_short(p, arg, value);
	}
	return 0;
}

/* Defaults: auto-detected format, library defaults for the rest. */
/* The dist of weft-mpi, or NULL: the one setting of the front end that is
 * not an option (cli_set_dist). */
static const weft_dist *commands_dist;

void cli_set_dist(const weft_dist *dist)
{
	commands_dist = dist;
}

void cli_common_init(cli_common *c)
{
	memset(c, 0, sizeof *c);
	weft_open_options_init(&c->open);
	c->open.dist = commands_dist;
}

/*
 * The options that set a format option of the library: --clock-offsets,
 * the ROSS ones (their flag's value, or "1" for --resync), and -O
 * KEY=VALUE for any of them. The library checks the value and says what
 * it takes.
 */
static const struct format_flag {
	int id;
	const char *key;
} format_flags[] = {
	{ CLI_OPT_CLOCK_OFFSETS, "ovni.clock_offsets" },
	{ CLI_OPT_ROSS_KIND, "ross.kind" },
	{ CLI_OPT_ROSS_CLOCK_RATE, "ross.clock_rate" },
	{ CLI_OPT_ROSS_MODEL_SCHEMA, "ross.model_schema" },
	{ CLI_OPT_RESYNC, "ross.resync" },
};

/* Sets format option `key` to `value`: 1, or -1 after printing the library's reason. */
static int set_format_option(cli_common *c, const char *command, const char *key,
			     const char *value)
{
	if (weft_open_options_set(&c->open, key, value) == 0)
		return 1;
	cli_usage_error(command, "%s", weft_last_error());
	return -1;
}

/* -O KEY=VALUE (the key is copied: the value stays in argv, as the library wants). */
static int option_assignment(cli_common *c, const char *command, const char *text)
{
	const char *eq = strchr(text, '=');
	if (eq == NULL || eq == text) {
		cli_usage_error(command, "-O takes KEY=VALUE (ross.kind=gvt), not '%s'", text);
		return -1;
	}
	char key[64];
	snprintf(key, sizeof key, "%.*s", (int)(eq - text), text);
	return set_format_option(c, command, key, eq + 1);
}

/* A format option given by its own flag or by -O; 0 when `id` is neither. */
static int format_option(cli_common *c, const char *command, int id, const char *value)
{
	if (id == CLI_OPT_OPTION)
		return option_assignment(c, command, value);
	for (size_t i = 0; i < sizeof format_flags / sizeof format_flags[0]; i++)
		if (format_flags[i].id == id)
			return set_format_option(c, command, format_flags[i].key,
						 id == CLI_OPT_RESYNC ? "1" : value);
	return 0;
}

/* --threads N: 1 to 1024 (the open scan uses at most one helper today). */
static int parse_threads(const char *command, const char *value, int *out)
{
	char *end;
	errno = 0;
	long n = strtol(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || n < 1 || n > 1024) {
		cli_usage_error(command, "--threads expects a number from 1 to 1024, not '%s'",
				value);
		return -1;
	}
	*out = (int)n;
	return 1;
}

/* --format NAME, --threads N and the format options. */
int cli_common_option(cli_common *c, const char *command, int id, const char *value)
{
	switch (id) {
	case CLI_OPT_FORMAT: {
		int format = weft_format_from_name(value);
		if (format < 0) {
			cli_usage_error(command, "unknown format '%s' (%s)", value,
					cli_format_list(""));
			return -1;
		}
		c->open.format = (weft_format)format;
		return 1;
	}
	case CLI_OPT_THREADS:
		return parse_threads(command, value, &c->open.threads);
	case CLI_OPT_QUIET:
		c->quiet = 1;
		return 1;
	case CLI_OPT_VERBOSE:
		c->verbose = 1;
		return 1;
	default:
		return format_option(c, command, id, value);
	}
}

/* Exactly one positional argument: the trace. */
int cli_take_trace_path(cli_common *c, const cli_parser *p)
{
	if (p->positional_count == 0) {
		cli_usage_error(p->command, "missing the TRACE argument");
		return -1;
	}
	if (p->positional_count > 1) {
		cli_usage_error(p->command, "unexpected argument '%s'", p->positional[1]);
		return -1;
	}
	c->trace_path = p->positional[0];
	return 0;
}

/* Nanoseconds per unit of the time suffixes; NULL suffix = end of table. */
static const struct time_unit {
	const char *suffix;
	uint64_t ns;
} time_units[] = {
	{ "", 1 },
	{ "ns", 1 },
	{ "us", 1000 },
	{ "ms", 1000000 },
	{ "s", 1000000000 },
	{ "min", 60ull * 1000000000 },
	{ "h", 3600ull * 1000000000 },
	{ NULL, 0 }
};

/*
 * "<digits>[.<digits>][unit]". The value is computed with integers only
 * (no rounding surprises): whole part times the unit, plus the fraction
 * digits scaled down one decimal at a time. Overflow is an error.
 */
int cli_parse_time(const char *text, uint64_t *ns)
{
	const char *s = text;
	uint64_t whole = 0;
	const char *frac = NULL;
	size_t frac_len = 0;

	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (whole > (UINT64_MAX - 9) / 10)
			return -1;
		whole = whole * 10 + (uint64_t)(*s - '0');
	}
	if (*s == '.') {
		frac = ++s;
		while (*s >= '0' && *s <= '9')
			s++;
		frac_len = (size_t)(s - frac);
	}
	for (const struct time_unit *u = time_units; u->suffix != NULL; u++) {
		if (strcmp(s, u->suffix) != 0)
			continue;
		if (whole > UINT64_MAX / u->ns)
			return -1;
		uint64_t total = whole * u->ns;
		uint64_t scale = u->ns;
		for (size_t i = 0; i < frac_len && scale > 1; i++) {
			scale /= 10;
			uint64_t part = (uint64_t)(frac[i] - '0') * scale;
			if (total > UINT64_MAX - part)
				return -1;
			total += part;
		}
		*ns = total;
		return 0;
	}
	return -1;
}

/* --from/--to: "+T" relative to the trace's start, "T" a clock value. */
int cli_window_option(cli_window *w, const char *command, const char *option,
		      const char *value, int is_to)
{
	int relative = value[0] == '+';
	uint64_t ns;

	if (cli_parse_time(value + relative, &ns) < 0) {
		cli_usage_error(command, "invalid time '%s' for %s (e.g. 1500, 10ms, 2s; "
				"+10ms: 10 ms after the start of the trace)", value, option);
		return -1;
	}
	if (is_to) {
		w->to = ns;
		w->to_relative = relative;
	} else {
		w->from = ns;
		w->from_relative = relative;
	}
	return 0;
}

/*
 * Adds the trace's start to the relative times, then checks the order of
 * the two ends. The start is read (the first events of every stream) only
 * for a relative time, or for an absolute --from on a format read in time
 * order (not Heph, whose start needs a scan), which gets a note when it
 * lies before the start: the usual slip is "10ms" meant from the start.
 */
int cli_window_apply(const cli_window *w, weft_trace *trace, const char *command,
		     weft_filter *filter)
{
	uint64_t start = 0;
	/* the note costs a look at the first events: only where that is cheap */
	int absolute_from = !w->from_relative && w->from != 0 &&
			    weft_trace_natural_order(trace) == WEFT_ORDER_TIME;

	if (w->from_relative || w->to_relative || absolute_from) {
		int rc = weft_trace_start_time(trace, &start);
		if (rc < 0)
			return cli_library_error(command, "reading the start of the trace", rc);
	}
	if (absolute_from && w->from < start && (w->to == 0 || w->to_relative || w->to >= start))
		fprintf(stderr, "weft %s: note: --from %" PRIu64 " ns is before the start of the "
			"trace (%" PRIu64 " ns) and selects from its start; times are the trace's "
			"clock: +10ms is 10 ms after its start\n", command, w->from, start);
	filter->from = w->from + (w->from_relative ? start : 0);
	filter->to = w->to + (w->to_relative ? start : 0);
	if (filter->from < w->from || filter->to < w->to)
		return cli_usage_error(command, "the time window ends past the clock's range");
	if ((w->to != 0 || w->to_relative) && filter->to < filter->from)
		return cli_usage_error(command, "--to is before --from (%" PRIu64 " < %" PRIu64
				       " ns)", filter->to, filter->from);
	return CLI_EXIT_OK;
}
