/* SPDX-License-Identifier: MIT */
/*
 * cli/ross_cli.h - what the ROSS analysis commands (`weft table`,
 * `summary`, `plot`) share: requiring a ROSS trace (the library says
 * which traces are), sizes in options. The analyses themselves are the
 * library's (weft/ross.h).
 */
#ifndef WEFT_CLI_ROSS_CLI_H
#define WEFT_CLI_ROSS_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "weft/weft.h"

/* CLI_EXIT_OK for a ROSS trace; else prints why and CLI_EXIT_FAILURE. */
int cli_ross_require(const weft_trace *trace, const char *command);

/*
 * Parses a size in bytes: digits with an optional K, M or G suffix
 * (powers of 1024). 0 on success, -1 when invalid.
 */
int cli_parse_size(const char *text, uint64_t *bytes);

#endif /* WEFT_CLI_ROSS_CLI_H */
