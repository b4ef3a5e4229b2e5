/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_write_records.c - the records API of the Pallas
 * writer (weft/pallas.h): the payload of each record kind, laid out as
 * Pallas's record functions push it, and the attribute lists of one
 * record. The records go to the grammar through weft_pallas_record_raw()
 * and, for the one-u32 records, through weft__pw_record_u32()
 * (pallas_write_grammar.c, which also holds Enter, Leave and Generic, the most
 * frequent, so that its fast path inlines into them).
 */
#include <stddef.h>
#include <string.h>

#include "formats/pallas/pallas_writer_internal.h"

/* ---- Payload builders -------------------------------------------------------------------------- */

/*
 * A payload built field by field, host order (little-endian: checked in
 * pallas_writer_internal.h) with no padding, as Pallas's push_data lays it out.
 */
typedef struct payload {
	uint8_t b[32];
	size_t n;
} payload;

/* Appends a u32 (one 4-byte store: see event_hash). */
static void put32(payload *p, uint32_t v)
{
	memcpy(p->b + p->n, &v, 4);
	p->n += 4;
}

/* Appends a u64. */
static void put64(payload *p, uint64_t v)
{
	memcpy(p->b + p->n, &v, 8);
	p->n += 8;
}

/* A record whose payload is one u64 (requests, task ids). */
static int rec_u64(weft_pallas_thread *t, const weft_pallas_attrs *a, uint64_t ts,
		   int32_t record, uint64_t v)
{
	payload p = { .n = 0 };
	put64(&p, v);
	return weft_pallas_record_raw(t, a, ts, record, WEFT_PALLAS_ROLE_SINGLE, p.b, p.n);
}

/* Point-to-point MPI: peer, comm, tag, length and, for the non-blocking ones, the request. */
static int rec_p2p(weft_pallas_thread *t, const weft_pallas_attrs *a, uint64_t ts,
		   int32_t record, uint32_t peer, uint32_t comm, uint32_t tag,
		   uint64_t length, const uint64_t *request)
{
	payload p = { .n = 0 };
	put32(&p, peer);
	put32(&p, comm);
	put32(&p, tag);
	put64(&p, length);
	if (request != NULL)
		put64(&p, *request);
	return weft_pallas_record_raw(t, a, ts, record, WEFT_PALLAS_ROLE_SINGLE, p.b, p.n);
}

int weft_pallas_record_mpi_send(weft_pallas_thread *t, const weft_pallas_attrs *a,
				uint64_t ts, uint32_t receiver, uint32_t comm,
				uint32_t tag, uint64_t length)
{
	return rec_p2p(t, a, ts, WEFT_PALLAS_REC_MPI_SEND, receiver, comm, tag, length, NULL);
}

int weft_pallas_record_mpi_isend(weft_pallas_thread *t, const weft_pallas_attrs *a,
				 uint64_t ts, uint32_t receiver, uint32_t comm,
				 uint32_t tag, uint64_t length, uint64_t request)
{
	return rec_p2p(t, a, ts, WEFT_PALLAS_REC_MPI_ISEND, receiver, comm, tag, length,
		       &request);
}

int weft_pallas_record_mpi_isend_complete(weft_pallas_thread *t,
					  const weft_pallas_attrs *a, uint64_t ts,
					  uint64_t request)
{
	return rec_u64(t, a, ts, WEFT_PALLAS_REC_MPI_ISEND_COMPLETE, request);
}

int weft_pallas_record_mpi_irecv_request(weft_pallas_thread *t,
					 const weft_pallas_attrs *a, uint64_t ts,
					 uint64_t request)
{
	return rec_u64(t, a, ts, WEFT_PALLAS_REC_MPI_IRECV_REQUEST, request);
}

int weft_pallas_record_mpi_recv(weft_pallas_thread *t, const weft_pallas_attrs *a,
				uint64_t ts, uint32_t sender, uint32_t comm,
				uint32_t tag, uint64_t length)
{
	return rec_p2p(t, a, ts, WEFT_PALLAS_REC_MPI_RECV, sender, comm, tag, length, NULL);
}

int weft_pallas_record_mpi_irecv(weft_pallas_thread *t, const weft_pallas_attrs *a,
				 uint64_t ts, uint32_t sender, uint32_t comm,
				 uint32_t tag, uint64_t length, uint64_t request)
{
	return rec_p2p(t, a, ts, WEFT_PALLAS_REC_MPI_IRECV, sender, comm, tag, length,
		       &request);
}

int weft_pallas_record_mpi_collective_begin(weft_pallas_thread *t,
					    const weft_pallas_attrs *a, uint64_t ts)
{
	return weft_pallas_record_raw(t, a, ts, WEFT_PALLAS_REC_MPI_COLLECTIVE_BEGIN,
				      WEFT_PALLAS_ROLE_SINGLE, NULL, 0);
}

int weft_pallas_record_mpi_collective_end(weft_pallas_thread *t,
					  const weft_pallas_attrs *a, uint64_t ts,
					  uint32_t op, uint32_t comm, uint32_t root,
					  uint64_t sent, uint64_t received)
{
	payload p = { .n = 0 };
	put32(&p, op);
	put32(&p, comm);
	put32(&p, root);
	put64(&p, sent);
	put64(&p, received);
	return weft_pallas_record_raw(t, a, ts, WEFT_PALLAS_REC_MPI_COLLECTIVE_END,
				      WEFT_PALLAS_ROLE_SINGLE, p.b, p.n);
}

int weft_pallas_record_omp_fork(weft_pallas_thread *t, const weft_pallas_attrs *a,
				uint64_t ts, uint32_t threads)
{
	return weft__pw_record_u32(t, a, ts, WEFT_PALLAS_REC_OMP_FORK,
				   WEFT_PALLAS_ROLE_BLOCK_START, threads);
}

int weft_pallas_record_omp_join(weft_pallas_thread *t, const weft_pallas_attrs *a,
				uint64_t ts)
{
	return weft_pallas_record_raw(t, a, ts, WEFT_PALLAS_REC_OMP_JOIN,
				      WEFT_PALLAS_ROLE_BLOCK_END, NULL, 0);
}

int weft_pallas_record_omp_acquire_lock(weft_pallas_thread *t, const weft_pallas_attrs *a,
					uint64_t ts, uint32_t lock)
{
	return weft__pw_record_u32(t, a, ts, WEFT_PALLAS_REC_OMP_ACQUIRE_LOCK,
				   WEFT_PALLAS_ROLE_SINGLE, lock);
}

int weft_pallas_record_omp_release_lock(weft_pallas_thread *t, const weft_pallas_attrs *a,
					uint64_t ts, uint32_t lock)
{
	return weft__pw_record_u32(t, a, ts, WEFT_PALLAS_REC_OMP_RELEASE_LOCK,
				   WEFT_PALLAS_ROLE_SINGLE, lock);
}

int weft_pallas_record_omp_task_create(weft_pallas_thread *t, const weft_pallas_attrs *a,
				       uint64_t ts, uint64_t task)
{
	return rec_u64(t, a, ts, WEFT_PALLAS_REC_OMP_TASK_CREATE, task);
}

int weft_pallas_record_omp_task_switch(weft_pallas_thread *t, const weft_pallas_attrs *a,
				       uint64_t ts, uint64_t task)
{
	return rec_u64(t, a, ts, WEFT_PALLAS_REC_OMP_TASK_SWITCH, task);
}

int weft_pallas_record_omp_task_complete(weft_pallas_thread *t, const weft_pallas_attrs *a,
					 uint64_t ts, uint64_t task)
{
	return rec_u64(t, a, ts, WEFT_PALLAS_REC_OMP_TASK_COMPLETE, task);
}

int weft_pallas_record_thread_fork(weft_pallas_thread *t, const weft_pallas_attrs *a,
				   uint64_t ts, uint32_t threads)
{
	return weft__pw_record_u32(t, a, ts, WEFT_PALLAS_REC_THREAD_FORK,
				   WEFT_PALLAS_ROLE_BLOCK_START, threads);
}

int weft_pallas_record_thread_join(weft_pallas_thread *t, const weft_pallas_attrs *a,
				   uint64_t ts)
{
	return weft_pallas_record_raw(t, a, ts, WEFT_PALLAS_REC_THREAD_JOIN,
				      WEFT_PALLAS_ROLE_BLOCK_END, NULL, 0);
}

int weft_pallas_record_thread_team_begin(weft_pallas_thread *t, const weft_pallas_attrs *a,
					 uint64_t ts)
{
	return weft_pallas_record_raw(t, a, ts, WEFT_PALLAS_REC_THREAD_TEAM_BEGIN,
				      WEFT_PALLAS_ROLE_BLOCK_START, NULL, 0);
}

int weft_pallas_record_thread_team_end(weft_pallas_thread *t, const weft_pallas_attrs *a,
				       uint64_t ts)
{
	return weft_pallas_record_raw(t, a, ts, WEFT_PALLAS_REC_THREAD_TEAM_END,
				      WEFT_PALLAS_ROLE_BLOCK_END, NULL, 0);
}

int weft_pallas_record_thread_begin(weft_pallas_thread *t, const weft_pallas_attrs *a,
				    uint64_t ts)
{
	return weft_pallas_record_raw(t, a, ts, WEFT_PALLAS_REC_THREAD_BEGIN,
				      WEFT_PALLAS_ROLE_BLOCK_START, NULL, 0);
}

int weft_pallas_record_thread_end(weft_pallas_thread *t, const weft_pallas_attrs *a,
				  uint64_t ts)
{
	return weft_pallas_record_raw(t, a, ts, WEFT_PALLAS_REC_THREAD_END,
				      WEFT_PALLAS_ROLE_BLOCK_END, NULL, 0);
}

int weft_pallas_record_thread_acquire_lock(weft_pallas_thread *t,
					   const weft_pallas_attrs *a, uint64_t ts,
					   uint32_t lock)
{
	return weft__pw_record_u32(t, a, ts, WEFT_PALLAS_REC_THREAD_ACQUIRE_LOCK,
				   WEFT_PALLAS_ROLE_SINGLE, lock);
}

int weft_pallas_record_thread_release_lock(weft_pallas_thread *t,
					   const weft_pallas_attrs *a, uint64_t ts,
					   uint32_t lock)
{
	return weft__pw_record_u32(t, a, ts, WEFT_PALLAS_REC_THREAD_RELEASE_LOCK,
				   WEFT_PALLAS_ROLE_SINGLE, lock);
}

int weft_pallas_record_thread_task_create(weft_pallas_thread *t,
					  const weft_pallas_attrs *a, uint64_t ts)
{
	return weft_pallas_record_raw(t, a, ts, WEFT_PALLAS_REC_THREAD_TASK_CREATE,
				      WEFT_PALLAS_ROLE_SINGLE, NULL, 0);
}

int weft_pallas_record_thread_task_switch(weft_pallas_thread *t,
					  const weft_pallas_attrs *a, uint64_t ts)
{
	return weft_pallas_record_raw(t, a, ts, WEFT_PALLAS_REC_THREAD_TASK_SWITCH,
				      WEFT_PALLAS_ROLE_SINGLE, NULL, 0);
}

int weft_pallas_record_thread_task_complete(weft_pallas_thread *t,
					    const weft_pallas_attrs *a, uint64_t ts)
{
	return weft_pallas_record_raw(t, a, ts, WEFT_PALLAS_REC_THREAD_TASK_COMPLETE,
				      WEFT_PALLAS_ROLE_SINGLE, NULL, 0);
}

/* ---- Attribute lists ------------------------------------------------------------------------------ */

void weft_pallas_attrs_init(weft_pallas_attrs *l)
{
	if (l == NULL)
		return;
	memset(l, 0, offsetof(weft_pallas_attrs, bytes) + 7);
	l->size = 7;
}

/* Appends one value of `size` bytes (Pallas's AttributeData: u16 size, u32 ref, value). */
static int attrs_add(weft_pallas_attrs *l, uint32_t attribute, const void *value, size_t size)
{
	if (l == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "NULL attribute list");
	if (l->size < 7 || l->count >= WEFT_PALLAS_ATTRS_MAX ||
	    l->size + 6u + size > WEFT_PALLAS_ATTRS_BYTES) {
		l->refused = 1;
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "attribute list full (at most %d values) or not initialised",
				   WEFT_PALLAS_ATTRS_MAX);
	}
	uint8_t *p = l->bytes + l->size;
	uint16_t entry = (uint16_t)(6 + size);
	memcpy(p, &entry, 2);
	memcpy(p + 2, &attribute, 4);
	memcpy(p + 6, value, size);
	l->size = (uint16_t)(l->size + entry);
	l->count++;
	return 0;
}

int weft_pallas_attrs_add_u8(weft_pallas_attrs *l, uint32_t a, uint8_t v) { return attrs_add(l, a, &v, 1); }
int weft_pallas_attrs_add_u16(weft_pallas_attrs *l, uint32_t a, uint16_t v) { return attrs_add(l, a, &v, 2); }
int weft_pallas_attrs_add_u32(weft_pallas_attrs *l, uint32_t a, uint32_t v) { return attrs_add(l, a, &v, 4); }
int weft_pallas_attrs_add_u64(weft_pallas_attrs *l, uint32_t a, uint64_t v) { return attrs_add(l, a, &v, 8); }
int weft_pallas_attrs_add_i8(weft_pallas_attrs *l, uint32_t a, int8_t v) { return attrs_add(l, a, &v, 1); }
int weft_pallas_attrs_add_i16(weft_pallas_attrs *l, uint32_t a, int16_t v) { return attrs_add(l, a, &v, 2); }
int weft_pallas_attrs_add_i32(weft_pallas_attrs *l, uint32_t a, int32_t v) { return attrs_add(l, a, &v, 4); }
int weft_pallas_attrs_add_i64(weft_pallas_attrs *l, uint32_t a, int64_t v) { return attrs_add(l, a, &v, 8); }
int weft_pallas_attrs_add_float(weft_pallas_attrs *l, uint32_t a, float v) { return attrs_add(l, a, &v, 4); }
int weft_pallas_attrs_add_double(weft_pallas_attrs *l, uint32_t a, double v) { return attrs_add(l, a, &v, 8); }

int weft_pallas_attrs_add_ref(weft_pallas_attrs *l, uint32_t attribute, int type, uint32_t ref)
{
	if (type < WEFT_PALLAS_TYPE_STRING || type > WEFT_PALLAS_TYPE_LOCATION_GROUP) {
		if (l != NULL)
			l->refused = 1;
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "attribute type %d is not a reference type (11 to 25)", type);
	}
	return attrs_add(l, attribute, &ref, 4);
}
