/* SPDX-License-Identifier: MIT */
/*
 * formats/heph/heph_writer.c - the Heph trace writer (weft/heph.h).
 *
 * Each stream handle builds its packets in place in its own buffer: the
 * fixed part at weft_heph_event_begin(), attributes appended one by one,
 * the size patched in at weft_heph_event_end(). Only complete packets are
 * ever written, and only under the writer's lock with a loop that finishes
 * short writes before anyone else writes: on the shared O_APPEND file
 * descriptor, packets of different threads therefore never interleave.
 * After the first failed write every later write is refused, so that a
 * partial packet can only be the last bytes of the file.
 *
 * Layout (big-endian, no padding):
 *   event:    u32 magic, u32 size, u32 stream, u32 counter, u64 substream,
 *             u64 start, u64 end, u16 desc_len, desc, attributes
 *   attribute: u16 name_len, name, u8 type, value
 *   metadata: u32 magic, u32 size, u16 name_len, name, value
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/heph/heph_internal.h"

#define EPOCH_PACKET 23u         /* 8 + 2 + "epoch" + u64 */
#define MAX_BUFFER (1u << 30)    /* largest buffer_size accepted */
#define MAX_PACKET UINT32_MAX
#define TMP_SUFFIX ".tmp"

/* What a stream handle can do now. */
enum stream_state {
	S_IDLE,    /* between events: pos == done */
	S_EVENT,   /* an event is being built in [done, pos) */
	S_REFUSED, /* the event in progress was refused; end reports why */
	S_CLOSED   /* the writer is closed: every call fails */
};

struct weft_heph_stream {
	weft_heph_writer *w;
	weft_heph_stream *prev, *next; /* the writer's list of handles */
	uint8_t *buf;
	size_t cap;       /* bytes allocated */
	size_t nominal;   /* the configured size; cap exceeds it for a big packet */
	size_t done;      /* bytes of complete packets at the start of buf */
	size_t pos;       /* end of the packet being built */
	uint32_t id;
	uint32_t counter; /* counter of the next event */
	int state;        /* enum stream_state */
	int refused;      /* status of the refused event (S_REFUSED) */
};

/* A stream id whose handle was freed, and where its counter stopped. */
struct retired {
	uint32_t id;
	uint32_t next;
};

struct weft_heph_writer {
	pthread_mutex_t lock; /* the fd, the list of streams, retired, error */
	int fd;
	char *path;           /* the final name */
	char *tmp_path;       /* the name while writing */
	const char *current;  /* tmp_path, then path after the rename */
	size_t buffer_size;
	int replace, sync;
	int closed;           /* weft_heph_writer_close() was called */
	uint64_t written;     /* bytes in the file */
	int error;            /* first failed write (sticky), or 0 */
	char failure[512];    /* its message */
	weft_heph_stream *streams;
	struct retired *retired;
	size_t retired_count, retired_cap;
};

/* ---- Big-endian stores ------------------------------------------------------- */

/* The format is big-endian whatever the host; memcpy keeps stores unaligned-safe. */
static inline void put16(uint8_t *p, uint16_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap16(v);
#endif
	memcpy(p, &v, sizeof v);
}

/* u32, big-endian. */
static inline void put32(uint8_t *p, uint32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	memcpy(p, &v, sizeof v);
}

/* u64, big-endian. */
static inline void put64(uint8_t *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, sizeof v);
}

/* IEEE 754 doubles are stored as the big-endian u64 of their bits. */
static inline void put_f64(uint8_t *p, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof bits);
	put64(p, bits);
}

/* ---- Writing to the file --------------------------------------------------------- */

/*
 * Writes `len` bytes at the end of the file, finishing short writes and
 * retrying EINTR. The caller holds the lock, so the pieces of a short
 * write stay contiguous. The first failure is kept: later writes are
 * refused with it, so that a partial packet can only end the file.
 */
static int write_locked(weft_heph_writer *w, const uint8_t *data, size_t len)
{
	size_t off = 0;
	if (w->error != 0)
		return weft__error(w->error, NULL, WEFT_NO_OFFSET, "%s", w->failure);
	int err = weft__write_full(w->fd, data, len, WEFT__AT_POSITION, &off);
	w->written += off;
	if (err == 0)
		return WEFT_OK;
	w->error = weft__error(WEFT_EIO, w->tmp_path, w->written,
			       "cannot write %zu bytes of packets: %s", len - off, strerror(err));
	snprintf(w->failure, sizeof w->failure, "%s", weft_last_error());
	return w->error;
}

/* Writes the complete packets buffered by `s` under the writer's lock. */
static int write_packets(weft_heph_stream *s)
{
	weft_heph_writer *w = s->w;
	pthread_mutex_lock(&w->lock);
	int rc = write_locked(w, s->buf, s->done);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

/*
 * Drops the complete packets from the buffer (written or lost) and moves
 * the packet in progress, if any, to its start.
 */
static void drop_packets(weft_heph_stream *s)
{
	size_t open = s->pos - s->done;
	if (open > 0 && s->done > 0)
		memmove(s->buf, s->buf + s->done, open);
	s->done = 0;
	s->pos = open;
}

/* ---- Refusals ---------------------------------------------------------------- */

/*
 * Refuses the event in progress on `s` with `status` (whose message is
 * already set): its bytes are dropped, and every later call for it
 * returns `status` until weft_heph_event_end() or _cancel().
 */
static int refuse(weft_heph_stream *s, int status)
{
	s->pos = s->done;
	s->state = S_REFUSED;
	s->refused = status;
	return status;
}

/* A length the format cannot hold: the event is refused, never truncated. */
static int refuse_length(weft_heph_stream *s, const char *what, size_t len)
{
	weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
		    "heph stream %u: %s of %zu bytes or elements does not fit in "
		    "16 bits (at most %u): event refused", s->id, what, len,
		    WEFT_HEPH_MAX_LEN);
	return refuse(s, WEFT_EINVAL);
}

/* A packet whose size would not fit its u32 field: the event is refused. */
static int refuse_packet_size(weft_heph_stream *s)
{
	weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
		    "heph stream %u: the packet would exceed %u bytes: event refused",
		    s->id, MAX_PACKET);
	return refuse(s, WEFT_EINVAL);
}

/*
 * The answer to a call that cannot apply to the state of `s`: a closed
 * writer, an add or end without a begin, or a refused event (which
 * repeats its status).
 */
static int state_error(weft_heph_stream *s, const char *call)
{
	if (s == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "%s: NULL stream", call);
	if (s->state == S_CLOSED)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "%s: heph stream %u: the writer is closed", call, s->id);
	if (s->state == S_REFUSED)
		return s->refused;
	return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
			   "%s: heph stream %u: no event begun", call, s->id);
}

/* ---- Buffer space -------------------------------------------------------------- */

/*
 * Grows the buffer so that the packet in progress (alone in it) can take
 * `need` more bytes. The capacity never exceeds MAX_PACKET, so a packet
 * that fits in the buffer always fits in its u32 size field.
 */
static int grow(weft_heph_stream *s, size_t need)
{
	uint64_t want = (uint64_t)s->pos + need;
	uint64_t cap = (uint64_t)s->cap * 2;
	if (want > MAX_PACKET)
		return refuse_packet_size(s);
	while (cap < want)
		cap *= 2;
	if (cap > MAX_PACKET)
		cap = MAX_PACKET;
	uint8_t *buf = realloc(s->buf, (size_t)cap);
	if (buf == NULL) {
		weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
			    "heph stream %u: cannot buffer a packet of %llu bytes",
			    s->id, (unsigned long long)want);
		return refuse(s, WEFT_ENOMEM);
	}
	s->buf = buf;
	s->cap = (size_t)cap;
	return WEFT_OK;
}

/*
 * Slow path of every append: the buffer lacks `need` bytes. Writes the
 * complete packets first; when the packet in progress still does not fit,
 * the buffer grows for it (it is then written alone at its end). A failed
 * write refuses the event in progress.
 */
static int make_room(weft_heph_stream *s, size_t need)
{
	if (s->done > 0) {
		int rc = write_packets(s);
		drop_packets(s);
		if (rc < 0)
			return refuse(s, rc);
		if (s->cap - s->pos >= need)
			return WEFT_OK;
	}
	return grow(s, need);
}

/*
 * Returns where `need` more bytes of the packet in progress go, making
 * room when needed; NULL when the event was refused.
 */
static inline uint8_t *reserve(weft_heph_stream *s, size_t need)
{
	if (WEFT_UNLIKELY(s->cap - s->pos < need) && make_room(s, need) < 0)
		return NULL;
	uint8_t *p = s->buf + s->pos;
	s->pos += need;
	return p;
}

/* Shrinks a buffer grown for a big packet back to its configured size. */
static void shrink(weft_heph_stream *s)
{
	uint8_t *buf = malloc(s->nominal);
	if (buf == NULL)
		return; /* keep the big one; it works as well */
	free(s->buf);
	s->buf = buf;
	s->cap = s->nominal;
}

/* ---- The trace file ------------------------------------------------------------ */

/* Copies of `path` and `path` + ".tmp" into the writer. */
static int set_paths(weft_heph_writer *w, const char *path)
{
	size_t n = strlen(path);
	w->path = malloc(n + 1);
	w->tmp_path = malloc(n + sizeof TMP_SUFFIX);
	if (w->path == NULL || w->tmp_path == NULL)
		return weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	memcpy(w->path, path, n + 1);
	memcpy(w->tmp_path, path, n);
	memcpy(w->tmp_path + n, TMP_SUFFIX, sizeof TMP_SUFFIX);
	w->current = w->tmp_path;
	return WEFT_OK;
}

/*
 * Takes the options (NULL: all defaults) and checks them. Buffers smaller
 * than WEFT_HEPH_MIN_BUFFER are raised to it; larger than MAX_BUFFER are
 * refused, so that a buffer never reaches the u32 size of a packet.
 */
static int set_options(weft_heph_writer *w, const weft_heph_writer_options *opts)
{
	weft_heph_writer_options o = { 0 };
	if (opts != NULL)
		o = *opts;
	if (o.buffer_size == 0)
		o.buffer_size = WEFT_HEPH_DEFAULT_BUFFER;
	if (o.buffer_size < WEFT_HEPH_MIN_BUFFER)
		o.buffer_size = WEFT_HEPH_MIN_BUFFER;
	if (o.buffer_size > MAX_BUFFER)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "heph writer: buffer_size %zu exceeds %u bytes",
				   o.buffer_size, MAX_BUFFER);
	w->buffer_size = o.buffer_size;
	w->replace = o.replace != 0;
	w->sync = o.sync != 0;
	return WEFT_OK;
}

/*
 * Creates the temporary file. O_EXCL: an existing one belongs to another
 * writer or holds a crashed run's trace, neither of which may be lost.
 * O_APPEND: every write() lands whole at the end, whichever thread does it.
 */
static int open_tmp(weft_heph_writer *w)
{
	struct stat st;
	if (!w->replace && lstat(w->path, &st) == 0)
		return weft__error(WEFT_EEXIST, w->path, WEFT_NO_OFFSET,
				   "the trace exists (set the replace option to overwrite it)");
	w->fd = open(w->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
	if (w->fd >= 0)
		return WEFT_OK;
	if (errno == EEXIST)
		return weft__error(WEFT_EEXIST, w->tmp_path, WEFT_NO_OFFSET,
				   "exists: another writer is using it, or a crashed run "
				   "left its trace there (read it, then remove it)");
	return weft__error_errno(w->tmp_path, "cannot create");
}

/* The `epoch` metadata packet: the trace's time 0 in ns since 1970. */
static int write_epoch(weft_heph_writer *w, uint64_t epoch)
{
	uint8_t p[EPOCH_PACKET];
	put32(p, HEPH_META_MAGIC);
	put32(p + 4, EPOCH_PACKET);
	put16(p + 8, 5);
	memcpy(p + 10, "epoch", 5);
	put64(p + 15, epoch);
	return write_locked(w, p, sizeof p);
}

/* Releases the memory of a writer (its file is handled by the caller). */
static void writer_release(weft_heph_writer *w)
{
	while (w->streams != NULL) {
		weft_heph_stream *s = w->streams;
		w->streams = s->next;
		free(s->buf);
		free(s);
	}
	pthread_mutex_destroy(&w->lock);
	free(w->retired);
	free(w->path);
	free(w->tmp_path);
	free(w);
}

/* Options, the .tmp file, the epoch packet; nothing left behind on failure. */
int weft_heph_writer_create(const char *path, const weft_heph_writer_options *opts,
			    weft_heph_writer **out)
{
	if (out != NULL)
		*out = NULL;
	if (path == NULL || path[0] == '\0' || out == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "weft_heph_writer_create: NULL or empty argument");
	weft_heph_writer *w = calloc(1, sizeof *w);
	if (w == NULL)
		return weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	w->fd = -1;
	pthread_mutex_init(&w->lock, NULL);
	int rc = set_paths(w, path);
	if (rc == 0)
		rc = set_options(w, opts);
	if (rc == 0)
		rc = open_tmp(w);
	if (rc == 0 && opts != NULL && opts->has_epoch)
		rc = write_epoch(w, opts->epoch);
	if (rc < 0) {
		if (w->fd >= 0) {
			close(w->fd);
			unlink(w->tmp_path);
		}
		writer_release(w);
		return rc;
	}
	*out = w;
	return WEFT_OK;
}

/*
 * Writes what each stream buffers and closes its handle: the events in
 * progress are dropped. Returns the first failure.
 */
static int close_streams_locked(weft_heph_writer *w)
{
	int rc = WEFT_OK;
	for (weft_heph_stream *s = w->streams; s != NULL; s = s->next) {
		int r = write_locked(w, s->buf, s->done);
		if (rc == 0)
			rc = r;
		s->done = s->pos = 0;
		s->state = S_CLOSED;
	}
	return rc;
}

/*
 * Moves the finished file to its final name, unless that would replace a
 * file the options do not allow to replace (created after the check at
 * create time).
 */
static int publish(weft_heph_writer *w)
{
	struct stat st;
	if (!w->replace && lstat(w->path, &st) == 0)
		return weft__error(WEFT_EEXIST, w->path, WEFT_NO_OFFSET,
				   "the trace appeared while it was written; "
				   "it is left in %s", w->tmp_path);
	if (rename(w->tmp_path, w->path) != 0)
		return weft__error(WEFT_EIO, w->tmp_path, WEFT_NO_OFFSET,
				   "cannot rename it to %s: %s", w->path, strerror(errno));
	w->current = w->path;
	return WEFT_OK;
}

/* Last buffers out, then sync and rename only when every write succeeded. */
int weft_heph_writer_close(weft_heph_writer *w)
{
	if (w == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "weft_heph_writer_close: NULL writer");
	pthread_mutex_lock(&w->lock);
	if (w->closed) {
		pthread_mutex_unlock(&w->lock);
		return weft__error(WEFT_EINVAL, w->path, WEFT_NO_OFFSET,
				   "the heph writer is already closed");
	}
	w->closed = 1;
	int rc = close_streams_locked(w);
	if (rc == 0 && w->error != 0) /* e.g. from weft_heph_stream_free() */
		rc = weft__error(w->error, NULL, WEFT_NO_OFFSET, "%s", w->failure);
	if (rc == 0 && w->sync && fsync(w->fd) != 0)
		rc = weft__error_errno(w->tmp_path, "cannot sync");
	if (close(w->fd) != 0 && rc == 0)
		rc = weft__error_errno(w->tmp_path, "cannot close");
	w->fd = -1;
	if (rc == 0)
		rc = publish(w);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

/* A writer never closed is abandoned: its .tmp file goes with it. */
void weft_heph_writer_free(weft_heph_writer *w)
{
	if (w == NULL)
		return;
	if (!w->closed) {
		close(w->fd);
		unlink(w->tmp_path);
	}
	writer_release(w);
}

/* The name the data is under now. */
const char *weft_heph_writer_path(const weft_heph_writer *w)
{
	return w != NULL ? w->current : NULL;
}

/* ---- Streams --------------------------------------------------------------------- */

/*
 * The counter a new handle of `id` starts from: where its last freed
 * handle stopped, else 0. Called under the lock.
 */
static uint32_t retired_counter(const weft_heph_writer *w, uint32_t id)
{
	for (size_t i = 0; i < w->retired_count; i++)
		if (w->retired[i].id == id)
			return w->retired[i].next;
	return 0;
}

/* Remembers where the counter of a freed handle stopped (under the lock). */
static void retire(weft_heph_writer *w, uint32_t id, uint32_t next)
{
	for (size_t i = 0; i < w->retired_count; i++) {
		if (w->retired[i].id == id) {
			w->retired[i].next = next;
			return;
		}
	}
	if (weft__array_grow((void **)&w->retired, &w->retired_cap, w->retired_count + 1,
			     sizeof *w->retired) < 0)
		return; /* the next handle of this id restarts at 0 */
	w->retired[w->retired_count++] = (struct retired){ id, next };
}

/* Is `id` taken by a live handle? Called under the lock. */
static int stream_id_taken(const weft_heph_writer *w, uint32_t id)
{
	for (const weft_heph_stream *s = w->streams; s != NULL; s = s->next)
		if (s->id == id)
			return 1;
	return 0;
}

/* Attaches the new handle `s` to `w` and sets its counter (under the lock). */
static int attach_locked(weft_heph_writer *w, weft_heph_stream *s)
{
	if (w->closed)
		return weft__error(WEFT_EINVAL, w->path, WEFT_NO_OFFSET,
				   "heph stream %u: the writer is closed", s->id);
	if (stream_id_taken(w, s->id))
		return weft__error(WEFT_EINVAL, w->path, WEFT_NO_OFFSET,
				   "heph stream %u: another handle has this stream id", s->id);
	s->counter = retired_counter(w, s->id);
	s->next = w->streams;
	if (w->streams != NULL)
		w->streams->prev = s;
	w->streams = s;
	return WEFT_OK;
}

/* Allocates outside the lock; attaches (id checks, counter) under it. */
int weft_heph_stream_create(weft_heph_writer *w, uint32_t stream_id,
			    weft_heph_stream **out)
{
	if (out != NULL)
		*out = NULL;
	if (w == NULL || out == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "weft_heph_stream_create: NULL argument");
	weft_heph_stream *s = calloc(1, sizeof *s);
	uint8_t *buf = malloc(w->buffer_size);
	if (s == NULL || buf == NULL) {
		free(s);
		free(buf);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "heph stream %u: cannot allocate %zu bytes",
				   stream_id, w->buffer_size);
	}
	s->w = w;
	s->buf = buf;
	s->cap = s->nominal = w->buffer_size;
	s->id = stream_id;
	s->state = S_IDLE;
	pthread_mutex_lock(&w->lock);
	int rc = attach_locked(w, s);
	pthread_mutex_unlock(&w->lock);
	if (rc < 0) {
		free(buf);
		free(s);
		return rc;
	}
	*out = s;
	return WEFT_OK;
}

/* Last packets out and the counter remembered, then unlinked and freed. */
void weft_heph_stream_free(weft_heph_stream *s)
{
	if (s == NULL)
		return;
	weft_heph_writer *w = s->w;
	pthread_mutex_lock(&w->lock);
	if (s->state != S_CLOSED) {
		write_locked(w, s->buf, s->done); /* a failure is kept for close */
		retire(w, s->id, s->counter);
	}
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		w->streams = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	pthread_mutex_unlock(&w->lock);
	free(s->buf);
	free(s);
}

/* Complete packets out; the event in progress moves to the buffer start. */
int weft_heph_stream_flush(weft_heph_stream *s)
{
	if (s == NULL || s->state == S_CLOSED)
		return state_error(s, "weft_heph_stream_flush");
	int rc = write_packets(s); /* also reports an earlier failed write */
	drop_packets(s);
	return rc;
}

/* The id given at creation (0 for NULL). */
uint32_t weft_heph_stream_id(const weft_heph_stream *s)
{
	return s != NULL ? s->id : 0;
}

/* The counter the next event gets (0 for NULL). */
uint32_t weft_heph_stream_counter(const weft_heph_stream *s)
{
	return s != NULL ? s->counter : 0;
}

/* Only between events: the event in progress already holds its counter. */
int weft_heph_stream_set_counter(weft_heph_stream *s, uint32_t next)
{
	if (s == NULL || s->state == S_CLOSED)
		return state_error(s, "weft_heph_stream_set_counter");
	if (s->state != S_IDLE)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "heph stream %u: cannot set the counter during an event",
				   s->id);
	s->counter = next;
	return WEFT_OK;
}

/* ---- Events ------------------------------------------------------------------------ */

/*
 * A begin while an event is in progress: the caller forgot an end. Both
 * events are refused (a refused event left pending is simply replaced).
 */
static int begin_misuse(weft_heph_stream *s)
{
	if (s == NULL || s->state == S_CLOSED)
		return state_error(s, "weft_heph_event_begin");
	weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
		    "heph stream %u: event begun while another one was not ended "
		    "(both refused)", s->id);
	return refuse(s, WEFT_EINVAL);
}

/*
 * Hot path: writes the fixed part and the description in place; the size
 * is patched in by weft_heph_event_end().
 */
int weft_heph_event_begin(weft_heph_stream *s, uint64_t substream, uint64_t start,
			  uint64_t end, const char *desc, size_t desc_len)
{
	if (WEFT_UNLIKELY(s == NULL || s->state != S_IDLE)) {
		if (s == NULL || s->state != S_REFUSED)
			return begin_misuse(s);
		s->state = S_IDLE; /* replaces the refused event */
	}
	if (desc_len == WEFT_HEPH_CSTR)
		desc_len = desc != NULL ? strlen(desc) : 0;
	if (WEFT_UNLIKELY(desc_len > WEFT_HEPH_MAX_LEN))
		return refuse_length(s, "description", desc_len);
	if (WEFT_UNLIKELY(desc == NULL && desc_len > 0)) {
		weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
			    "heph stream %u: NULL description", s->id);
		return refuse(s, WEFT_EINVAL);
	}
	s->state = S_EVENT;
	uint8_t *p = reserve(s, HEPH_EVENT_FIXED_SIZE + desc_len);
	if (p == NULL)
		return s->refused;
	put32(p, HEPH_EVENT_MAGIC);
	put32(p + 8, s->id);
	put32(p + 12, s->counter);
	put64(p + 16, substream);
	put64(p + 24, start);
	put64(p + 32, end);
	put16(p + 40, (uint16_t)desc_len);
	if (desc_len > 0)
		memcpy(p + HEPH_EVENT_FIXED_SIZE, desc, desc_len);
	return WEFT_OK;
}

/*
 * Appends the head of an attribute (name and type) and reserves
 * `value_size` bytes for its value; returns where the value goes, or NULL
 * with the event refused (*rc set).
 */
static inline uint8_t *attr_begin(weft_heph_stream *s, const char *name, unsigned type,
				  uint64_t value_size, int *rc)
{
	if (WEFT_UNLIKELY(s == NULL || s->state != S_EVENT)) {
		*rc = state_error(s, "weft_heph_event_add");
		return NULL;
	}
	if (WEFT_UNLIKELY(name == NULL)) {
		weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
			    "heph stream %u: NULL attribute name", s->id);
		*rc = refuse(s, WEFT_EINVAL);
		return NULL;
	}
	size_t name_len = strlen(name);
	if (WEFT_UNLIKELY(name_len > WEFT_HEPH_MAX_LEN)) {
		*rc = refuse_length(s, "attribute name", name_len);
		return NULL;
	}
	uint64_t need = 3 + (uint64_t)name_len + value_size;
	if (WEFT_UNLIKELY(need > MAX_PACKET)) {
		*rc = refuse_packet_size(s);
		return NULL;
	}
	uint8_t *p = reserve(s, (size_t)need);
	if (p == NULL) {
		*rc = s->refused;
		return NULL;
	}
	put16(p, (uint16_t)name_len);
	memcpy(p + 2, name, name_len);
	p[2 + name_len] = (uint8_t)type;
	return p + 3 + name_len;
}

/* Name, type 0x01, 8 bytes. */
int weft_heph_event_add_u64(weft_heph_stream *s, const char *name, uint64_t value)
{
	int rc;
	uint8_t *p = attr_begin(s, name, WEFT_HEPH_TYPE_U64, 8, &rc);
	if (p == NULL)
		return rc;
	put64(p, value);
	return WEFT_OK;
}

/* Name, type 0x02, the two's complement bits. */
int weft_heph_event_add_i64(weft_heph_stream *s, const char *name, int64_t value)
{
	int rc;
	uint8_t *p = attr_begin(s, name, WEFT_HEPH_TYPE_I64, 8, &rc);
	if (p == NULL)
		return rc;
	put64(p, (uint64_t)value);
	return WEFT_OK;
}

/* Name, type 0x03, the IEEE 754 bits. */
int weft_heph_event_add_f64(weft_heph_stream *s, const char *name, double value)
{
	int rc;
	uint8_t *p = attr_begin(s, name, WEFT_HEPH_TYPE_F64, 8, &rc);
	if (p == NULL)
		return rc;
	put_f64(p, value);
	return WEFT_OK;
}

/*
 * The length of a string value (WEFT_HEPH_CSTR: strlen), or -1 with the
 * event refused when it is NULL with bytes or too long for 16 bits.
 */
static int64_t value_length(weft_heph_stream *s, const char *value, size_t len)
{
	if (len == WEFT_HEPH_CSTR)
		len = value != NULL ? strlen(value) : 0;
	if (value == NULL && len > 0) {
		weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
			    "heph stream %u: NULL string value", s->id);
		refuse(s, WEFT_EINVAL);
		return -1;
	}
	if (len > WEFT_HEPH_MAX_LEN) {
		refuse_length(s, "string value", len);
		return -1;
	}
	return (int64_t)len;
}

/* The state checks of every add, before its value is looked at. */
static int check_add(weft_heph_stream *s)
{
	if (s == NULL || s->state != S_EVENT)
		return state_error(s, "weft_heph_event_add");
	return WEFT_OK;
}

/* Name, type 0x04, u16 length and the bytes; the length is checked first. */
int weft_heph_event_add_str(weft_heph_stream *s, const char *name,
			    const char *value, size_t len)
{
	int rc = check_add(s);
	if (rc < 0)
		return rc;
	int64_t n = value_length(s, value, len);
	if (n < 0)
		return s->refused;
	uint8_t *p = attr_begin(s, name, WEFT_HEPH_TYPE_STR, 2 + (uint64_t)n, &rc);
	if (p == NULL)
		return rc;
	put16(p, (uint16_t)n);
	if (n > 0)
		memcpy(p + 2, value, (size_t)n);
	return WEFT_OK;
}

/*
 * Head of an array attribute of `count` fixed 8-byte elements: checks the
 * count, writes name, type and count; returns where the elements go.
 */
static uint8_t *array8_begin(weft_heph_stream *s, const char *name, unsigned type,
			     const void *values, size_t count, int *rc)
{
	if ((*rc = check_add(s)) < 0)
		return NULL;
	if (count > WEFT_HEPH_MAX_LEN) {
		*rc = refuse_length(s, "array", count);
		return NULL;
	}
	if (values == NULL && count > 0) {
		weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
			    "heph stream %u: NULL array", s->id);
		*rc = refuse(s, WEFT_EINVAL);
		return NULL;
	}
	uint8_t *p = attr_begin(s, name, type | WEFT_HEPH_TYPE_ARRAY,
				2 + 8 * (uint64_t)count, rc);
	if (p == NULL)
		return NULL;
	put16(p, (uint16_t)count);
	return p + 2;
}

/* Name, type 0x81, u16 count, the elements. */
int weft_heph_event_add_u64_array(weft_heph_stream *s, const char *name,
				  const uint64_t *values, size_t count)
{
	int rc;
	uint8_t *p = array8_begin(s, name, WEFT_HEPH_TYPE_U64, values, count, &rc);
	if (p == NULL)
		return rc;
	for (size_t i = 0; i < count; i++)
		put64(p + 8 * i, values[i]);
	return WEFT_OK;
}

/* Name, type 0x82, u16 count, the elements. */
int weft_heph_event_add_i64_array(weft_heph_stream *s, const char *name,
				  const int64_t *values, size_t count)
{
	int rc;
	uint8_t *p = array8_begin(s, name, WEFT_HEPH_TYPE_I64, values, count, &rc);
	if (p == NULL)
		return rc;
	for (size_t i = 0; i < count; i++)
		put64(p + 8 * i, (uint64_t)values[i]);
	return WEFT_OK;
}

/* Name, type 0x83, u16 count, the elements. */
int weft_heph_event_add_f64_array(weft_heph_stream *s, const char *name,
				  const double *values, size_t count)
{
	int rc;
	uint8_t *p = array8_begin(s, name, WEFT_HEPH_TYPE_F64, values, count, &rc);
	if (p == NULL)
		return rc;
	for (size_t i = 0; i < count; i++)
		put_f64(p + 8 * i, values[i]);
	return WEFT_OK;
}

/*
 * Bytes of the elements of a string array (each u16 length + bytes), or
 * -1 with the event refused when an element is NULL or too long.
 */
static int64_t str_array_size(weft_heph_stream *s, const char *const *values,
			      const size_t *lens, size_t count)
{
	uint64_t total = 0;
	for (size_t i = 0; i < count; i++) {
		int64_t n = value_length(s, values[i], lens ? lens[i] : WEFT_HEPH_CSTR);
		if (n < 0)
			return -1;
		total += 2 + (uint64_t)n;
	}
	return (int64_t)total;
}

/*
 * Name, type 0x84, u16 count, each element with its u16 length. Every
 * length is checked before anything is appended.
 */
int weft_heph_event_add_str_array(weft_heph_stream *s, const char *name,
				  const char *const *values, const size_t *lens,
				  size_t count)
{
	int rc = check_add(s);
	if (rc < 0)
		return rc;
	if (count > WEFT_HEPH_MAX_LEN)
		return refuse_length(s, "array", count);
	if (values == NULL && count > 0) {
		weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
			    "heph stream %u: NULL array", s->id);
		return refuse(s, WEFT_EINVAL);
	}
	int64_t size = str_array_size(s, values, lens, count);
	if (size < 0)
		return s->refused;
	uint8_t *p = attr_begin(s, name, WEFT_HEPH_TYPE_STR | WEFT_HEPH_TYPE_ARRAY,
				2 + (uint64_t)size, &rc);
	if (p == NULL)
		return rc;
	put16(p, (uint16_t)count);
	p += 2;
	for (size_t i = 0; i < count; i++) {
		size_t n = lens != NULL ? lens[i] : WEFT_HEPH_CSTR;
		if (n == WEFT_HEPH_CSTR)
			n = values[i] != NULL ? strlen(values[i]) : 0;
		put16(p, (uint16_t)n);
		if (n > 0)
			memcpy(p + 2, values[i], n);
		p += 2 + n;
	}
	return WEFT_OK;
}

/*
 * Writes a packet that needed a buffer larger than the configured one: it
 * is alone in the buffer and goes out in one write, then the buffer
 * shrinks back.
 */
static int write_big_packet(weft_heph_stream *s)
{
	int rc = write_packets(s);
	s->done = s->pos = 0;
	shrink(s);
	return rc;
}

/*
 * Hot path: patches the size in, gives the counter its next value; a
 * packet that outgrew the buffer is written at once.
 */
int weft_heph_event_end(weft_heph_stream *s)
{
	if (WEFT_UNLIKELY(s == NULL || s->state != S_EVENT)) {
		int rc = state_error(s, "weft_heph_event_end");
		if (s != NULL && s->state == S_REFUSED)
			s->state = S_IDLE;
		return rc;
	}
	put32(s->buf + s->done + 4, (uint32_t)(s->pos - s->done));
	s->done = s->pos;
	s->counter++;
	s->state = S_IDLE;
	if (WEFT_UNLIKELY(s->cap > s->nominal))
		return write_big_packet(s);
	return WEFT_OK;
}

/* The bytes of the event in progress are forgotten. */
void weft_heph_event_cancel(weft_heph_stream *s)
{
	if (s == NULL || s->state == S_CLOSED || s->state == S_IDLE)
		return;
	s->pos = s->done;
	s->state = S_IDLE;
}

/* begin + end, for the many events without attributes. */
int weft_heph_emit(weft_heph_stream *s, uint64_t substream, uint64_t start,
		   uint64_t end, const char *desc)
{
	int rc = weft_heph_event_begin(s, substream, start, end, desc, WEFT_HEPH_CSTR);
	if (rc < 0) {
		weft_heph_event_cancel(s);
		return rc;
	}
	return weft_heph_event_end(s);
}
