/* SPDX-License-Identifier: MIT */
/*
 * cli/complete.c - `weft __complete`, what the bash and zsh completion
 * scripts (share/completion/) ask the command at completion time, so that
 * they never drift from it: the commands, the options a command accepts
 * (its option table, the one its parser uses) and the values an option
 * takes. Hidden: not in `weft --help`.
 *
 *   weft __complete commands          "NAME<TAB>SUMMARY" per command
 *                                     (not sync: the scripts add it)
 *   weft __complete options CMD       every spelling: "--long", "-s"
 *   weft __complete values CMD OPT    the values of OPT ("--level", "-l"),
 *                                     one per line, or "@file" for a path;
 *                                     exit 1 when OPT takes no value
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

/*
 * The values of the options that have a closed set of them (NULL command:
 * every command). "@file": a path; "@formats", "@outputs", "@ross-levels":
 * the library's lists. Options not here take free values (times, globs).
 * Tests check that every value is named in the command's --help.
 */
static const struct option_values {
	const char *command;
	const char *option;
	const char *values; /* "a|b|c" or "@..." */
} option_values[] = {
	{ NULL, "format", "@formats" },
	{ NULL, "clock-offsets", "@file" },
	{ NULL, "ross-kind", "gvt|rt|vt|evtrace|model" },
	{ NULL, "output", "@file" },
	{ "convert", "format-out", "@outputs" },
	{ "convert", "output-format", "@outputs" },
	{ "convert", "time", "real|virtual" },
	{ "convert", "ovni-cfg", "@file" },
	{ "table", "level", "@ross-levels" },
	{ "table", "sort", "file|virtual|real" },
	{ "plot", "level", "pe|kp" },
	{ "plot", "x", "virtual|real" },
	{ "plot", "mode", "gvt|rt|vt" },
	{ "profile", "by", "name|stream" },
};

/* `weft sync`, run by weft-mpi (weft hands it over): its options and
 * their values are completed here; it is no command of weft's table (no
 * page of its own: docs/sync.md), so the scripts offer its name. */
static const cli_command sync_command = { "sync", NULL, NULL, cli_sync_options };

/* The command named `name`, or NULL. */
static const cli_command *find_command(const cli_command *commands, const char *name)
{
	for (const cli_command *c = commands; c->name != NULL; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return strcmp(name, sync_command.name) == 0 ? &sync_command : NULL;
}

/* The entry of `spelled` ("--level", "-l") in a command's table, or NULL. */
static const cli_option *find_option(const cli_option *options, const char *spelled)
{
	for (const cli_option *o = options; o->id != 0; o++) {
		if (spelled[0] == '-' && spelled[1] == '-' && strcmp(spelled + 2, o->long_name) == 0)
			return o;
		if (spelled[0] == '-' && o->short_name != 0 && spelled[1] == o->short_name &&
		    spelled[2] == '\0')
			return o;
	}
	return NULL;
}

/* Prints the values of a list "@formats", "@outputs", "@ross-levels" or "a|b|c". */
static void print_values(const char *values)
{
	const char *name;

	if (strcmp(values, "@formats") == 0) {
		printf("auto\n");
		for (size_t i = 0; i < weft_format_count(); i++)
			printf("%s\n", weft_format_name(weft_format_at(i)));
	} else if (strcmp(values, "@outputs") == 0) {
		for (size_t i = 0; i < weft_output_count(); i++)
			printf("%s\n", weft_output_get(i)->name);
	} else if (strcmp(values, "@ross-levels") == 0) {
		for (size_t i = 0; (name = weft_ross_table_level_name(i)) != NULL; i++)
			printf("%s\n", name);
	} else if (values[0] == '@') {
		printf("%s\n", values);
	} else {
		for (const char *v = values; *v != '\0';) {
			size_t len = strcspn(v, "|");
			printf("%.*s\n", (int)len, v);
			v += len + (v[len] == '|');
		}
	}
}

/* `values CMD OPT`: 0 after printing the values (none: anything), 1 when OPT takes none. */
static int complete_values(const cli_command *c, const char *spelled)
{
	const cli_option *o = find_option(c->options, spelled);

	if (o == NULL || !o->takes_value)
		return CLI_EXIT_PROBLEMS;
	for (size_t i = 0; i < sizeof option_values / sizeof option_values[0]; i++) {
		const struct option_values *v = &option_values[i];
		if ((v->command == NULL || strcmp(v->command, c->name) == 0) &&
		    strcmp(v->option, o->long_name) == 0) {
			print_values(v->values);
			break;
		}
	}
	return CLI_EXIT_OK;
}

/* `options CMD`: every spelling of every option of the command's table. */
static void complete_options(const cli_command *c)
{
	for (const cli_option *o = c->options; o->id != 0; o++) {
		printf("--%s\n", o->long_name);
		if (o->short_name != 0)
			printf("-%c\n", o->short_name);
	}
}

int cli_complete(const cli_command *commands, int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "commands") == 0) {
		for (const cli_command *c = commands; c->name != NULL; c++)
			printf("%s\t%s\n", c->name, c->summary);
		return CLI_EXIT_OK;
	}
	const cli_command *c = argc >= 3 ? find_command(commands, argv[2]) : NULL;
	if (c != NULL && argc == 3 && strcmp(argv[1], "options") == 0) {
		complete_options(c);
		return CLI_EXIT_OK;
	}
	if (c != NULL && argc == 4 && strcmp(argv[1], "values") == 0)
		return complete_values(c, argv[3]);
	fprintf(stderr, "weft __complete: expected 'commands', 'options CMD' or "
			"'values CMD OPTION'\n");
	return CLI_EXIT_FAILURE;
}
