/* SPDX-License-Identifier: MIT */
/*
 * util/worker.h - one helper thread that does one job at a time for its
 * owner: the owner waits until the thread is idle, puts the next job in
 * place, and hands it over; the thread runs it while the owner goes on
 * (the background writer of the outputs and the run writer of the
 * external row sort). When the thread cannot be started the owner does
 * the work itself (`threaded` is 0 then).
 *
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_UTIL_WORKER_H
#define WEFT_UTIL_WORKER_H

#include <pthread.h>

typedef struct weft__worker {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int (*work)(void *ctx); /* runs the job in place: 0 or an errno */
	void *ctx;
	int threaded;           /* the thread runs (else the owner works inline) */
	int busy;               /* the thread has a job */
	int stop;
	int error;              /* errno of the first failed job (the owner may set it too) */
} weft__worker;

/* Starts the thread, idle; 1 when it runs, 0 when the owner must work inline. */
int weft__worker_start(weft__worker *w, int (*work)(void *ctx), void *ctx);
/*
 * Locks the worker once the thread is idle: the owner may then read what
 * the last job left and put the next one in place, then calls
 * weft__worker_hand_over(). Only when threaded.
 */
void weft__worker_claim(weft__worker *w);
/* Ends a claim: the job is run when `job` is 1 (0: nothing to do). */
void weft__worker_hand_over(weft__worker *w, int job);
/* Waits until the thread is idle; the first error (0 when none). */
int weft__worker_wait(weft__worker *w);
/*
 * Lets the last job end, stops and joins the thread; the first error.
 * Also for a worker never started (all zero), which has nothing to stop.
 */
int weft__worker_finish(weft__worker *w);

#endif /* WEFT_UTIL_WORKER_H */
