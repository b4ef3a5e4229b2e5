/* SPDX-License-Identifier: MIT */
/*
 * tests/eztrace/pthread_app.c - a program for `eztrace -t pthread`
 * (tests/python/test_otf2_pallas.py): two threads take a mutex 100 times
 * each. Nothing depends on timing (no condition waited on a variable
 * number of times), so that two runs record the same calls.
 */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int counter;

static void *work(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++) {
		pthread_mutex_lock(&lock);
		counter++;
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, work, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%d\n", counter);
	return 0;
}
