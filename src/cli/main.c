/* SPDX-License-Identifier: MIT */
/*
 * cli/main.c - the `weft` command: the dispatch of cli/commands.c.
 */
#include "cli/cli.h"

int main(int argc, char **argv)
{
	return cli_main(argc, argv);
}
