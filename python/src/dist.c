/* SPDX-License-Identifier: MIT */
/*
 * python/src/dist.c - weft.open(path, comm=...): the library's two
 * collectives (weft/dist.h, weft_dist) over a communicator of the caller,
 * an mpi4py one (MPI.COMM_WORLD) or any object with its four methods:
 * Get_rank(), Get_size(), gather(obj, root=0) (a list on rank 0, None
 * elsewhere) and bcast(obj, root=0). The module links no MPI; with
 * several ranks, opening and Trace.profile() are collective, as in
 * weft-mpi (docs/mpi.md): each rank reads its share of the streams and
 * rank 0 gets the whole trace's result.
 *
 * The collectives run inside library calls made without the GIL: they
 * take it back (PyGILState_Ensure) for the Python call. What the
 * communicator raises is kept and raised when the library call returns,
 * as a progress callback's is (progress.c), and the library is told that
 * the exchange failed.
 */
#include "weftpy.h"

#include <stdlib.h>
#include <string.h>

/* Keeps the exception being raised (the first one) for the call's end. */
static void keep_exception(wpy_trace *self)
{
	if (self->progress_exc_type == NULL)
		PyErr_Fetch(&self->progress_exc_type, &self->progress_exc_value,
			    &self->progress_exc_tb);
	else
		PyErr_Clear();
}

/* Joins rank 0's list of bytes objects into one malloc'ed block. 0 or -1. */
static int join_parts(wpy_trace *self, PyObject *list, void **all, size_t *lens)
{
	if (!PyList_Check(list) || PyList_GET_SIZE(list) != self->dist.ranks) {
		PyErr_SetString(PyExc_TypeError, "comm.gather() did not return a list of "
				"one item per rank on rank 0");
		return -1;
	}
	size_t total = 0;
	for (int r = 0; r < self->dist.ranks; r++) {
		PyObject *item = PyList_GET_ITEM(list, r);
		if (!PyBytes_Check(item)) {
			PyErr_SetString(PyExc_TypeError, "comm.gather() returned a non-bytes item");
			return -1;
		}
		lens[r] = (size_t)PyBytes_GET_SIZE(item);
		total += lens[r];
	}
	char *block = malloc(total ? total : 1);
	if (block == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	size_t at = 0;
	for (int r = 0; r < self->dist.ranks; r++) {
		memcpy(block + at, PyBytes_AS_STRING(PyList_GET_ITEM(list, r)), lens[r]);
		at += lens[r];
	}
	*all = block;
	return 0;
}

/* weft_dist.gather over comm.gather(bytes, root=0). */
static int dist_gather(void *user, const void *bytes, size_t len, void **all, size_t *lens)
{
	wpy_trace *self = user;
	PyGILState_STATE g = PyGILState_Ensure();
	int rc = 0;

	*all = NULL;
	PyObject *mine = PyBytes_FromStringAndSize(bytes, (Py_ssize_t)len);
	PyObject *got = mine ? PyObject_CallMethod(self->comm, "gather", "O", mine) : NULL;
	if (got == NULL || (self->dist.rank == 0 && join_parts(self, got, all, lens) < 0)) {
		keep_exception(self);
		rc = WEFT_EIO;
	}
	Py_XDECREF(mine);
	Py_XDECREF(got);
	PyGILState_Release(g);
	return rc;
}

/* weft_dist.broadcast over comm.bcast(bytes or None, root=0). */
static int dist_broadcast(void *user, void *bytes, size_t len)
{
	wpy_trace *self = user;
	PyGILState_STATE g = PyGILState_Ensure();
	int rc = 0;

	PyObject *mine = self->dist.rank == 0 ? PyBytes_FromStringAndSize(bytes, (Py_ssize_t)len)
					      : Py_NewRef(Py_None);
	PyObject *got = mine ? PyObject_CallMethod(self->comm, "bcast", "O", mine) : NULL;
	if (got != NULL && (!PyBytes_Check(got) || (size_t)PyBytes_GET_SIZE(got) != len)) {
		PyErr_SetString(PyExc_TypeError, "comm.bcast() did not return rank 0's bytes");
		Py_CLEAR(got);
	}
	if (got == NULL) {
		keep_exception(self);
		rc = WEFT_EIO;
	} else if (self->dist.rank != 0) {
		memcpy(bytes, PyBytes_AS_STRING(got), len);
	}
	Py_XDECREF(mine);
	Py_XDECREF(got);
	PyGILState_Release(g);
	return rc;
}

/* comm.name(): an int in [lo, hi], or -1 with an exception. */
static int comm_int(PyObject *comm, const char *name, long lo, long hi)
{
	PyObject *v = PyObject_CallMethod(comm, name, NULL);
	long n = v != NULL ? PyLong_AsLong(v) : -1;
	Py_XDECREF(v);
	if (PyErr_Occurred())
		return -1;
	if (n < lo || n > hi) {
		PyErr_Format(wpy_ArgumentError, "comm.%s() returned %ld", name, n);
		return -1;
	}
	return (int)n;
}

int wpy_dist_setup(wpy_trace *self, PyObject *comm, weft_open_options *o)
{
	if (comm == NULL || comm == Py_None)
		return 0;
	int ranks = comm_int(comm, "Get_size", 1, 1 << 24);
	int rank = ranks < 0 ? -1 : comm_int(comm, "Get_rank", 0, ranks - 1);
	if (rank < 0)
		return -1;
	if (ranks == 1)
		return 0; /* alone: nothing is collective */
	Py_XSETREF(self->comm, Py_NewRef(comm));
	self->dist = (weft_dist){ .rank = rank, .ranks = ranks, .gather = dist_gather,
				  .broadcast = dist_broadcast, .user = self };
	o->dist = &self->dist;
	return 0;
}
