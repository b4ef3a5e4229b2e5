/* SPDX-License-Identifier: MIT */
/*
 * outputs/flow_pairs.h - the two ends of each message, paired by flow id.
 *
 * The view gives the send and the receive of a message the same flow id
 * (view.h), one at a time and in either order. A writer that records a
 * message as one line once both ends are known (Paraver's communication
 * records) keeps the first end here until the second comes. Memory is
 * bounded: at most `max_pending` ends wait at once; past that, new ends
 * are refused (counted by the caller) rather than kept.
 *
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_FLOW_PAIRS_H
#define WEFT_OUTPUTS_FLOW_PAIRS_H

#include <stddef.h>
#include <stdint.h>

/* One end of a message: where and when, and what the message carried. */
typedef struct weft__flow_end {
	uint64_t time;
	uint32_t track;      /* the view track of the end */
	int end;             /* WEFT_FLOW_OUT (send) or WEFT_FLOW_IN (receive) */
	uint64_t size;       /* bytes of the message, 0 when unknown */
	int64_t tag;         /* the message tag, 0 when unknown */
} weft__flow_end;

typedef struct weft__flow_pairs weft__flow_pairs;

/* An empty table for up to `max_pending` waiting ends; NULL without memory. */
weft__flow_pairs *weft__flow_pairs_create(size_t max_pending);

/*
 * One end of message `flow_id` (nonzero). Returns 1 when the other end was
 * waiting: it is removed and copied to *other. 0 when this end now waits,
 * -1 when it was refused (the table is full, or no memory).
 */
int weft__flow_pairs_meet(weft__flow_pairs *p, uint64_t flow_id, const weft__flow_end *e,
			  weft__flow_end *other);

/* Ends still waiting for their other end. */
size_t weft__flow_pairs_waiting(const weft__flow_pairs *p);

void weft__flow_pairs_free(weft__flow_pairs *p);

#endif /* WEFT_OUTPUTS_FLOW_PAIRS_H */
