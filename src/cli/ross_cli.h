/* SPDX-License-Identifier: MIT */
/*
 * cli/ross_cli.h - what the ROSS analysis commands (`weft table`,
 * `summary`, `plot`) share: requiring a ROSS trace, the file (root node)
 * of a stream and its kind, the level of a stream, field look-up by
 * name, and printing the diagnostics of a trace on stderr.
 */
#ifndef WEFT_CLI_ROSS_CLI_H
#define WEFT_CLI_ROSS_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "weft/weft.h"

/* The ross.clock_rate option given (Hz), 0 when none. */
double cli_ross_clock_rate(const weft_open_options *options);

/* CLI_EXIT_OK for a ROSS trace; else prints why and CLI_EXIT_FAILURE. */
int cli_ross_require(const weft_trace *trace, const char *command);

/* The root node (one per ROSS file) above node `id`. */
const weft_node *cli_ross_root(const weft_trace *trace, uint32_t id);

/*
 * The kind of a ROSS file node from its metadata ("gvt", "rt", "vt",
 * "evtrace", "model"), copied into buf (size bytes); "" when unknown.
 */
void cli_ross_file_kind(const weft_node *root, char *buf, size_t size);

/* 1 when the text `name` (NUL-terminated) is the field's name. */
int cli_field_is(const weft_field *field, const char *name);

/* A scalar field as a double (integers converted; NaN for bytes/text). */
double cli_field_number(const weft_field *field);

/*
 * Parses a size in bytes: digits with an optional K, M or G suffix
 * (powers of 1024). 0 on success, -1 when invalid.
 */
int cli_parse_size(const char *text, uint64_t *bytes);

#endif /* WEFT_CLI_ROSS_CLI_H */
