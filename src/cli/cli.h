/* SPDX-License-Identifier: MIT */
/*
 * cli/cli.h - what the subcommands of the `weft` command share: exit
 * codes, a small option parser, the options common to every command
 * (--format, --clock-offsets, the ROSS options), opening a trace with a
 * clear message, and printing diagnostics.
 */
#ifndef WEFT_CLI_H
#define WEFT_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "weft/weft.h"

/* Exit codes of every subcommand. */
enum cli_exit {
	CLI_EXIT_OK = 0,       /* done, nothing wrong */
	CLI_EXIT_PROBLEMS = 1, /* done, problems found (check, sort --check), or
			        * some data could not be read (dump, convert, profile) */
	CLI_EXIT_FAILURE = 2   /* bad usage, or the trace could not be opened */
};

/* ---- Option parsing (cli/options.c) -------------------------------------- */

/* One option a command accepts. `id` is returned by cli_next_option(). */
typedef struct cli_option {
	const char *long_name; /* without the leading "--" */
	char short_name;       /* 0 when none */
	int takes_value;       /* 1: "--name VALUE" or "--name=VALUE" */
	int id;                /* > 0 */
} cli_option;

/* Identifiers of the options shared by all commands (commands use >= 100). */
enum cli_common_option_id {
	CLI_OPT_HELP = 1,
	CLI_OPT_FORMAT,
	CLI_OPT_CLOCK_OFFSETS,
	CLI_OPT_ROSS_KIND,
	CLI_OPT_ROSS_CLOCK_RATE,
	CLI_OPT_ROSS_MODEL_SCHEMA,
	CLI_OPT_RESYNC,
	CLI_OPT_THREADS,
	CLI_OPT_OPTION,
	CLI_OPT_QUIET,
	CLI_OPT_VERBOSE
};

/* The option entries of the common options, to put in a command's table. */
#define CLI_COMMON_OPTIONS \
	{ "help", 'h', 0, CLI_OPT_HELP }, \
	{ "format", 0, 1, CLI_OPT_FORMAT }, \
	{ "clock-offsets", 0, 1, CLI_OPT_CLOCK_OFFSETS }, \
	{ "ross-kind", 0, 1, CLI_OPT_ROSS_KIND }, \
	{ "ross-clock-rate", 0, 1, CLI_OPT_ROSS_CLOCK_RATE }, \
	{ "ross-model-schema", 0, 1, CLI_OPT_ROSS_MODEL_SCHEMA }, \
	{ "resync", 0, 0, CLI_OPT_RESYNC }, \
	{ "threads", 0, 1, CLI_OPT_THREADS }, \
	{ "option", 'O', 1, CLI_OPT_OPTION }, \
	{ "quiet", 'q', 0, CLI_OPT_QUIET }, \
	{ "verbose", 'v', 0, CLI_OPT_VERBOSE }

/*
 * A line of help to add under one common option in a command's --help
 * (what that option does specially there); lists end with option NULL.
 */
typedef struct cli_help_note {
	const char *option; /* long name, without "--" */
	const char *text;   /* one sentence, wrapped by the printer */
} cli_help_note;

/*
 * The options every command accepts (CLI_COMMON_OPTIONS), with their
 * help: the one text of `weft --help` and of every `weft CMD --help`,
 * under the heading "options of every command:". `notes` (or NULL) adds
 * what a command says specially about one of them.
 */
void cli_print_common_help(FILE *out, const cli_help_note *notes);
/* The note under --threads of the commands that share streams among threads. */
extern const cli_help_note cli_stream_threads_notes[];
/* --threads of dump, convert and table: reading aside while writing. */
extern const cli_help_note cli_write_threads_notes[];
/*
 * One entry of an options list: "  TAG  TEXT", TEXT wrapped at 79
 * columns and starting at column 28 (under TAG when TAG is longer).
 */
void cli_print_option_help(FILE *out, const char *tag, const char *text);

/* Walks the arguments of one command; positional arguments are kept. */
typedef struct cli_parser {
	const char *command;        /* "dump", for messages */
	int argc;
	char **argv;
	int index;                  /* next argument to look at */
	const cli_option *options;  /* terminated by an entry with id 0 */
	const char *positional[8];
	int positional_count;
	int options_ended;          /* "--" seen */
	int quiet;                  /* 1: usage errors are not printed (the
	                               ranks other than 0 of weft-mpi sync) */
	const char *program;        /* who says the usage errors: NULL for
	                               "weft", "weft-mpi" for weft-mpi sync */
} cli_parser;

void cli_parser_init(cli_parser *p, const char *command, int argc, char **argv,
		     const cli_option *options);
/*
 * The id of the next option (and its value), 0 when the arguments are
 * exhausted, or -1 after printing a usage error.
 */
int cli_next_option(cli_parser *p, const char **value);

/* Settings of the common options, filled by cli_common_option(). */
typedef struct cli_common {
	weft_open_options open;
	const char *trace_path;
	int quiet;           /* --quiet: no progress line */
	int verbose;         /* --verbose: what was opened, phases, threads, times */
	int stdout_streamed; /* the command writes stdout while it works (dump): a
			      * progress line only when stdout is a file */
} cli_common;

void cli_common_init(cli_common *c);
/*
 * Applies a common option. Returns 1 when handled, 0 when `id` is not a
 * common option, -1 after printing an error about its value.
 */
int cli_common_option(cli_common *c, const char *command, int id, const char *value);
/*
 * Takes the single TRACE argument out of the positional arguments; -1
 * after printing an error when there is none or more than one.
 */
int cli_take_trace_path(cli_common *c, const cli_parser *p);

/*
 * Parses a time: an integer or decimal number with an optional unit
 * (ns, us, ms, s, min, h; no unit = ns). 0 on success, -1 when invalid.
 */
int cli_parse_time(const char *text, uint64_t *ns);

/*
 * The time window of --from and --to. A time is a clock value of the
 * trace (what dump prints), or, written "+T", T after the trace's start
 * (weft_trace_start_time()), resolved once the trace is open.
 */
typedef struct cli_window {
	uint64_t from, to;          /* ns; to 0 = no end */
	int from_relative, to_relative;
} cli_window;

/*
 * The value of --from (is_to 0) or --to (is_to 1) into the window; 0, or
 * -1 after a usage error naming `option`.
 */
int cli_window_option(cli_window *w, const char *command, const char *option,
		      const char *value, int is_to);
/*
 * Sets the window of `filter`, relative times added to the trace's start.
 * CLI_EXIT_OK, or CLI_EXIT_FAILURE after a message (the end is before the
 * start, or the start could not be read).
 */
int cli_window_apply(const cli_window *w, weft_trace *trace, const char *command,
		     weft_filter *filter);

/* Prints "weft CMD: <message>" on stderr and returns CLI_EXIT_FAILURE. */
int cli_usage_error(const char *command, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;
/* The same said by `program` ("weft-mpi sync: ...", see 'weft-mpi sync --help'). */
int cli_usage_error_as(const char *program, const char *command, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

/* ---- Shared helpers (cli/common.c) ----------------------------------------- */

/*
 * Opens the trace of the common options; on failure prints the library's
 * message (weft_last_error()) and returns CLI_EXIT_FAILURE.
 */
int cli_open_trace(const cli_common *c, const char *command, weft_trace **out);
/*
 * The last library message (or the text of `status`) without its leading
 * "<path>: " when it starts with it: for lines that already name the path.
 */
const char *cli_message_about(const char *path, int status);
/* Prints a message for a failed library call; returns CLI_EXIT_FAILURE. */
int cli_library_error(const char *command, const char *what, int status);
/* "<file>:<offset>: <severity>: <message>" (without ":<offset>" when none). */
void cli_print_diag(FILE *out, const weft_diag *diag, const char *default_file);
/*
 * The diagnostics of the trace from the from-th on, on stderr, each as
 * "weft CMD: <diagnostic>". Returns 1 when one of them is an error (some
 * data could not be read: the command then exits with CLI_EXIT_PROBLEMS),
 * 0 when there were only warnings or none.
 */
int cli_print_diags_from(const weft_trace *trace, const char *command, size_t from);
const char *cli_severity_name(int severity);
/* "auto<auto_note>, ovni, heph, ross, pallas" (from the library's formats). */
const char *cli_format_list(const char *auto_note);
/*
 * A --stream glob that matches no stream of the trace: says so on stderr
 * with the streams there are; 1 then (the command exits with 1), else 0.
 */
int cli_stream_pattern_unmatched(const weft_trace *trace, const char *command,
				 const char *pattern);
/*
 * After a read with `filter` that delivered `delivered` events: when none
 * and a --stream or --event glob was given, says which matched nothing,
 * with what there is (streams, or the most frequent event codes); 1 then.
 */
int cli_report_unmatched(weft_trace *trace, const char *command, const weft_filter *filter,
			 uint64_t delivered);
/* "1.234567890 s", "12.345 ms", ... for a duration in ns. */
void cli_format_duration(char *buf, size_t size, uint64_t ns);

/* ---- Feedback on long work (cli/feedback.c) ---------------------------------- */

/*
 * Installs the progress callback in `o` (a copy of c->open) for `command`
 * when there is something to show: the progress line (stderr is a
 * terminal, no --quiet, and stdout is a file for a command that streams
 * to it), or the --verbose lines. Without either, `o` is left
 * as it is.
 */
void cli_feedback_options(const cli_common *c, const char *command, weft_open_options *o);
/* --verbose: "weft CMD: opened 'PATH': format F, layout version N, ...". */
void cli_feedback_opened(const weft_trace *trace);
/* Clears the progress line when one is shown (before printing on stderr). */
void cli_feedback_clear(void);
/* Clears the line, prints the --verbose end (threads used, total time), frees the trace. */
void cli_close_trace(weft_trace *trace);

/* ---- Subcommands (cli/cmd_*.c) -------------------------------------------- */

/* One subcommand: its name, what runs it, its one-line help, its options. */
typedef struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
	const cli_option *options;
} cli_command;

/*
 * `weft __complete ...`: what the shell completion scripts ask the
 * command (commands, a command's options, an option's values), from
 * `commands` (ends with name NULL) and their option tables (cli/complete.c).
 */
int cli_complete(const cli_command *commands, int argc, char **argv);

/*
 * `weft ARGS`: runs the subcommand argv[1] with the rest, or prints the
 * usage (cli/commands.c); returns the exit code.
 */
int cli_main(int argc, char **argv);
/* 1 when `name` is a subcommand of weft. */
int cli_command_exists(const char *name);

/*
 * The processes that share the work of the commands run from now on
 * (weft/dist.h; weft-mpi sets it), or NULL (the default): every trace the
 * commands open is opened with it (cli_common_init).
 */
void cli_set_dist(const weft_dist *dist);

/* Each gets argv[0] = command name; returns an exit code. */
int cli_cmd_info(int argc, char **argv);
int cli_cmd_dump(int argc, char **argv);
int cli_cmd_top(int argc, char **argv);
int cli_cmd_check(int argc, char **argv);
int cli_cmd_sort(int argc, char **argv);
int cli_cmd_convert(int argc, char **argv);
int cli_cmd_table(int argc, char **argv);
int cli_cmd_summary(int argc, char **argv);
int cli_cmd_profile(int argc, char **argv);
int cli_cmd_plot(int argc, char **argv);

/*
 * The options of `weft sync` (`weft-mpi sync`, src/mpi/sync.c, which
 * parses with this table; weft itself only lists it, for the completion).
 */
enum cli_sync_option_id {
	CLI_SYNC_HELP = 1, CLI_SYNC_FORCE, CLI_SYNC_PRINT, CLI_SYNC_VERBOSE, CLI_SYNC_ROUNDS,
	CLI_SYNC_OUTPUT
};
extern const cli_option cli_sync_options[];

/* Their option tables, for the completion. */
extern const cli_option cli_info_options[], cli_dump_options[], cli_top_options[],
	cli_check_options[], cli_sort_options[], cli_convert_options[], cli_table_options[],
	cli_summary_options[], cli_profile_options[], cli_plot_options[];

#endif /* WEFT_CLI_H */
