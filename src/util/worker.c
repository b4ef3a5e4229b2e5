/* SPDX-License-Identifier: MIT */
/*
 * util/worker.c - one helper thread, one job at a time (see worker.h).
 */
#include "util/worker.h"

/*
 * The thread: waits for a job, runs it without the lock, records its
 * error and says it is done; until stopped. After a failure the jobs
 * that follow are not run (the owner reports the first error).
 */
static void *worker_main(void *arg)
{
	weft__worker *w = arg;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->busy && !w->stop)
			pthread_cond_wait(&w->cond, &w->lock);
		if (!w->busy)
			break;
		int failed = w->error != 0;
		pthread_mutex_unlock(&w->lock);
		int err = failed ? 0 : w->work(w->ctx);
		pthread_mutex_lock(&w->lock);
		if (err != 0 && w->error == 0)
			w->error = err;
		w->busy = 0;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* The lock, the condition and the thread; whether the thread runs. */
int weft__worker_start(weft__worker *w, int (*work)(void *ctx), void *ctx)
{
	w->work = work;
	w->ctx = ctx;
	w->busy = w->stop = w->error = 0;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->threaded = pthread_create(&w->thread, NULL, worker_main, w) == 0;
	return w->threaded;
}

/* Takes the lock once no job is running (the owner then sets the next one). */
void weft__worker_claim(weft__worker *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->busy)
		pthread_cond_wait(&w->cond, &w->lock);
}

/* Hands the job over (when `job`) and releases the lock. */
void weft__worker_hand_over(weft__worker *w, int job)
{
	w->busy = job;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Waits for the job in progress; the first error. */
int weft__worker_wait(weft__worker *w)
{
	if (!w->threaded)
		return w->error;
	weft__worker_claim(w);
	int err = w->error;
	pthread_mutex_unlock(&w->lock);
	return err;
}

/* The last job ends, the thread stops; the lock and condition go. */
int weft__worker_finish(weft__worker *w)
{
	if (w->work == NULL)
		return w->error; /* never started */
	if (w->threaded) {
		weft__worker_claim(w);
		w->stop = 1;
		weft__worker_hand_over(w, 0);
		pthread_join(w->thread, NULL);
		w->threaded = 0;
	}
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	w->work = NULL;
	return w->error;
}
