/* SPDX-License-Identifier: MIT */
/*
 * cli/help.c - the help of the options every command accepts, written
 * once: `weft --help` and every `weft CMD --help` print it from here, so
 * that the man pages and docs/cli.md (checked by a test) have one source.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

enum {
	HELP_TAG_WIDTH = 24, /* "--ross-model-schema SPEC" */
	HELP_TEXT_COLUMN = 2 + HELP_TAG_WIDTH + 2,
	HELP_LINE_END = 79 /* the last column a line may fill */
};

/*
 * Prints `text` from column HELP_TEXT_COLUMN, word-wrapped before
 * HELP_LINE_END; `column` is where the cursor is on the first line.
 */
static void print_wrapped(FILE *out, const char *text, int column)
{
	const char *word = text;

	while (*word != '\0') {
		size_t len = strcspn(word, " ");
		int first = column == HELP_TEXT_COLUMN;
		if (!first && column + 1 + (int)len > HELP_LINE_END) {
			fprintf(out, "\n%*s", HELP_TEXT_COLUMN, "");
			column = HELP_TEXT_COLUMN;
			first = 1;
		}
		fprintf(out, "%s%.*s", first ? "" : " ", (int)len, word);
		column += (first ? 0 : 1) + (int)len;
		word += len;
		word += strspn(word, " ");
	}
	fputc('\n', out);
}

void cli_print_option_help(FILE *out, const char *tag, const char *text)
{
	if ((int)strlen(tag) > HELP_TAG_WIDTH)
		fprintf(out, "  %s\n%*s", tag, HELP_TEXT_COLUMN, "");
	else
		fprintf(out, "  %-*s  ", HELP_TAG_WIDTH, tag);
	print_wrapped(out, text, HELP_TEXT_COLUMN);
}

/* The help of each common option, in the order of CLI_COMMON_OPTIONS' use. */
static const struct common_help {
	const char *option; /* long name */
	const char *tag;
	const char *text;   /* NULL: the list of formats, from the library */
} common_help[] = {
	{ "format", "--format NAME", NULL },
	{ "clock-offsets", "--clock-offsets FILE",
	  "ovni: the ovnisync clock offset table (default: clock-offsets.txt in "
	  "the trace directory, when present)" },
	{ "threads", "--threads N",
	  "1: no helper thread; by default (or WEFT_THREADS in the environment): "
	  "one where it pays, e.g. to scan a Heph trace of 16 MiB or more on two "
	  "CPUs; the output is the same whatever N." },
	{ "ross-kind", "--ross-kind KIND",
	  "ROSS: the record kind of the files (gvt, rt, vt, evtrace or model) "
	  "instead of detecting it; implies --format ross" },
	{ "ross-clock-rate", "--ross-clock-rate HZ",
	  "ROSS: the true rate of the cycle counter; times become "
	  "real_time * 1e9 / HZ seconds" },
	{ "ross-model-schema", "--ross-model-schema SPEC",
	  "ROSS: the layout of the model data ('MODEL: u32 lpid, i64 count', or "
	  "@FILE), decoded into named fields" },
	{ "resync", "--resync",
	  "ROSS: after garbage in a file, go on at the next run of valid records "
	  "(reported) instead of stopping" },
	{ "option", "-O, --option KEY=VALUE",
	  "any format option of the library: ovni.clock_offsets, "
	  "ovni.unordered_lookback_bytes, ovni.unordered_max_events, "
	  "heph.sort_budget_bytes, ross.kind, ross.clock_rate, ross.model_schema, "
	  "ross.resync" },
	{ "quiet", "-q, --quiet",
	  "no progress line on a terminal (only that line and the --verbose "
	  "lines: warnings and errors are always printed)" },
	{ "verbose", "-v, --verbose",
	  "on stderr: what was opened (format, streams, files, bytes), each phase "
	  "of the work with its time, the threads used, the total time" },
	{ "help", "-h, --help", "this text" },
};

/* What the commands that share streams among threads say under --threads. */
const cli_help_note cli_stream_threads_notes[] = {
	{ "threads", "here: the streams are read by N threads, each its share of the "
		     "bytes (default: the cores, at most 8, each for 32 MiB plus 32 KiB per stream of the "
		     "trace, 8 times less for profile and sort, when each stream is read "
		     "without the others' bytes); a ROSS run is read in byte pieces of its "
		     "files, its open's scan too (a thread per 32 MiB of the run, up to one "
		     "per MiB of its largest file); under weft-mpi, each rank's share "
		     "(docs/mpi.md)." },
	{ NULL, NULL }
};

const cli_help_note cli_write_threads_notes[] = {
	{ "threads", "here: with two CPUs or more (convert -t chrome: three), for 4 MiB of "
		     "streams or more, one thread reads and merges the streams while another "
		     "writes; 1 forces one thread, 2 or more two, except convert -t chrome, "
		     "perfetto or paraver with 3 or more: N - 1 threads each read their share "
		     "of the streams (emulated ovni models: whole looms) and one "
		     "merges them. dump and table: one thread reads and "
		     "merges, and N threads (it too) format batches of events at once, written "
		     "in order (by default one per CPU, at most 8); dump with 3 or more, where "
		     "streams are read apart: N - 1 threads each read and format their share. "
		     "The same bytes either way." },
	{ NULL, NULL }
};

/* The note of `notes` about `option`, or NULL. */
static const char *note_about(const cli_help_note *notes, const char *option)
{
	for (const cli_help_note *n = notes; n != NULL && n->option != NULL; n++)
		if (strcmp(n->option, option) == 0)
			return n->text;
	return NULL;
}

void cli_print_common_help(FILE *out, const cli_help_note *notes)
{
	char formats[300];

	snprintf(formats, sizeof formats, "the trace format: %s", cli_format_list(" (default)"));
	fprintf(out, "\noptions of every command:\n");
	for (size_t i = 0; i < sizeof common_help / sizeof common_help[0]; i++) {
		const struct common_help *h = &common_help[i];
		cli_print_option_help(out, h->tag, h->text != NULL ? h->text : formats);
		const char *note = note_about(notes, h->option);
		if (note != NULL) {
			fprintf(out, "%*s", HELP_TEXT_COLUMN, "");
			print_wrapped(out, note, HELP_TEXT_COLUMN);
		}
	}
}
