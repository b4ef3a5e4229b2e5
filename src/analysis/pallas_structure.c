/* SPDX-License-Identifier: MIT */
/*
 * analysis/pallas_structure.c - weft_pallas_structure_write(), what
 * `weft dump --structure` prints: the grammar of a thread of a Pallas
 * trace as a tree, without unrolling it (like
 * `pallas_print -S`): sequences with their kind, occurrence count and
 * stored durations, loops with their iteration counts, events with their
 * names and counts. A sequence used in several places is printed in full
 * the first time and referred to afterwards, so the output stays the size
 * of the grammar.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/internal.h"

/* Deeper nesting is cut (printed as "..."): no real grammar gets there. */
#define MAX_PRINT_DEPTH 256

typedef struct structure_printer {
	weft_pallas_grammar *g;
	FILE *out;
	unsigned char *printed;  /* per sequence: already printed in full */
} structure_printer;

static int print_token(structure_printer *sp, weft_pallas_token tok, int depth);

static void indent(FILE *out, int depth)
{
	fprintf(out, "%*s", 2 * depth, "");
}

static int print_sequence(structure_printer *sp, uint32_t i, int depth)
{
	weft_pallas_sequence_info s;
	int rc = weft_pallas_grammar_sequence(sp->g, i, &s);
	if (rc < 0)
		return rc;
	indent(sp->out, depth);
	if (s.dead) { /* the root of a thread without events */
		fprintf(sp->out, "S%u (no tokens)\n", i);
		return 0;
	}
	fprintf(sp->out, "S%u %s  %s  x%" PRIu64, i, s.name,
		s.is_loop_body ? "loop body" : "block", s.durations.count);
	if (s.durations.count > 0)
		fprintf(sp->out, "  duration min %" PRIu64 " max %" PRIu64 " mean %" PRIu64
			" ns", s.durations.min, s.durations.max, s.durations.mean);
	if (sp->printed[i]) {
		fprintf(sp->out, "  (above)\n");
		return 0;
	}
	fputc('\n', sp->out);
	sp->printed[i] = 1;
	if (depth >= MAX_PRINT_DEPTH) {
		indent(sp->out, depth + 1);
		fprintf(sp->out, "...\n");
		return 0;
	}
	for (uint64_t k = 0; k < s.token_count; k++) {
		weft_pallas_token tok;
		if ((rc = weft_pallas_grammar_token(sp->g, i, k, &tok)) < 0 ||
		    (rc = print_token(sp, tok, depth + 1)) < 0)
			return rc;
	}
	return 0;
}

static int print_token(structure_printer *sp, weft_pallas_token tok, int depth)
{
	int rc = 0;
	if (tok.kind == WEFT_PALLAS_TOKEN_KIND_EVENT) {
		weft_pallas_event_info e;
		if ((rc = weft_pallas_grammar_event(sp->g, tok.index, &e)) < 0)
			return rc;
		indent(sp->out, depth);
		fprintf(sp->out, "E%u %s  x%" PRIu64 "\n", tok.index, e.description,
			e.occurrences);
	} else if (tok.kind == WEFT_PALLAS_TOKEN_KIND_SEQUENCE) {
		rc = print_sequence(sp, tok.index, depth);
	} else if (tok.kind == WEFT_PALLAS_TOKEN_KIND_LOOP) {
		weft_pallas_loop_info l;
		if ((rc = weft_pallas_grammar_loop(sp->g, tok.index, &l)) < 0)
			return rc;
		indent(sp->out, depth);
		fprintf(sp->out, "L%u  %u iterations  x%" PRIu64 "\n", tok.index,
			l.iterations, l.occurrences);
		rc = print_sequence(sp, l.repeated.index, depth + 1);
	}
	return rc;
}

int weft_pallas_grammar_available(const weft_trace *trace)
{
	return weft_trace_format(trace) == WEFT_FORMAT_PALLAS;
}

/* The tree of one thread, headed by its stream path and counts. */
int weft_pallas_structure_write(weft_trace *trace, uint32_t stream, FILE *out)
{
	structure_printer sp = { NULL, out, NULL };
	int rc = weft_pallas_grammar_open(trace, stream, &sp.g);
	if (rc < 0)
		return rc;
	size_t n = weft_pallas_grammar_sequence_count(sp.g);
	sp.printed = calloc(n ? n : 1, 1);
	if (sp.printed == NULL) {
		weft_pallas_grammar_free(sp.g);
		return WEFT_ENOMEM;
	}
	fprintf(out, "--- %s: %zu events, %zu sequences, %zu loops ---\n",
		weft_trace_stream(trace, stream)->path,
		weft_pallas_grammar_event_count(sp.g), n,
		weft_pallas_grammar_loop_count(sp.g));
	if (n > 0)
		rc = print_sequence(&sp, weft_pallas_grammar_root(sp.g), 0);
	free(sp.printed);
	weft_pallas_grammar_free(sp.g);
	return rc;
}
