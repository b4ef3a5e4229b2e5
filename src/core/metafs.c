/* SPDX-License-Identifier: MIT */
/*
 * core/metafs.c - what a backend asks the file system while it opens a
 * trace (is this a directory, which names does it hold, what does this
 * small file say), asked once and replayed elsewhere.
 *
 * Why: with a weft_dist of many ranks, every rank used to open the whole
 * trace, so an ovni trace of 64,000 streams cost 64,000 metadata files
 * read by each of 1,000 ranks from the parallel file system. Now rank 0
 * opens it through a recorder, which writes down each question and its
 * answer on a tape; the tape goes to every rank, whose open runs the same
 * code against it and touches no file. The backend's code is the same in
 * the three modes, so the ranks build the same trace. The tape is sent
 * in compressed chunks as it is written, so that the other ranks replay
 * while rank 0 still reads (the open takes about as long as rank 0's
 * alone) and no rank holds more than a chunk of it.
 *
 * The messages (broadcasts of packs, core/dist.c): BEGIN (the format, and
 * whether its open can be replayed) before the backend opens, DATA
 * (compressed entries, whole ones), then END (rank 0's status). Rank 0
 * sends FAILED instead of BEGIN when it fails before a backend opens.
 *
 * The tape is a sequence of entries (core/dist.c's packing): the kind of
 * question, the errno of the answer (0: it worked), then the answer: a
 * kind and size (stat), names in strcmp order (list), bytes (read).
 * Replaying follows the sequence: the backend asks the same questions in
 * the same order because it got the same answers. A question that does
 * not match the next entry is a bug, and fails the open.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "core/internal.h"
#include "util/strtab.h"

/* The tape is sent compressed, at zstd's fastest level: the metadata
 * files of a run repeat each other (the stream.json files of 4096 streams:
 * 2.2 MB, 15 KB compressed). */
#define TAPE_LEVEL 1

enum meta_op { OP_STAT = 1, OP_LIST, OP_READ };
enum meta_message { MSG_BEGIN = 1, MSG_DATA, MSG_END, MSG_FAILED, MSG_PREFETCH };

/* Entries are sent once this many bytes of them are written. */
#define CHUNK_BYTES (256u << 10)

struct weft__metafs {
	const weft_dist *dist;  /* the ranks the tape goes to (or comes from) */
	int keep;               /* every message also kept, for the trace's
	                           threads (weft__trace_reopen) */
	weft__pack kept;        /* those messages, each length-prefixed */
	int from_kept;          /* replaying from kept messages, not a dist */
	weft__unpack source;    /* from_kept: the next message */
	int replaying;
	int replayable;         /* BEGIN said the open can be replayed */
	int begun, ended;       /* BEGIN (or FAILED) and END sent or received */
	int rank0_status;       /* replaying: the status END brought */
	int error;              /* recording: a chunk could not be sent */
	weft__pack tape;        /* recording: the entries not sent yet;
	                           replaying: the chunk being replayed;
	                           a book: its entries */
	weft__unpack next;      /* replaying: the next entry */
	/* A book (weft__metafs_prefetch): questions asked of the file system
	 * and written down with their keys, paths relative to this root. */
	char *book_root;
	/* Rank 0 after a prefetch: the other ranks' books, one after the
	 * other, and a table of their entries by key (offset + 1, 0: none). */
	weft__pack books;
	size_t *book_slots;
	size_t book_slot_count;  /* a power of two */
	size_t books_root_len;   /* rank 0's root, cut from its questions' paths */
};

static int send_message(weft__metafs *fs, enum meta_message type, uint64_t a, uint64_t b);
static int gather_books(weft__metafs *fs, const void *book, size_t len, weft__pack *all);

int weft__metafs_recorder(const weft_dist *d, int keep, weft__metafs **out)
{
	*out = calloc(1, sizeof **out);
	if (*out == NULL) {
		weft__metafs stand_in = { .dist = d };
		if (d != NULL) /* the others wait for a message: FAILED */
			send_message(&stand_in, MSG_FAILED, 0, 0);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	(*out)->dist = d;
	(*out)->keep = keep;
	return 0;
}

void weft__metafs_free(weft__metafs *fs)
{
	if (fs == NULL)
		return;
	weft__pack_release(&fs->tape);
	weft__pack_release(&fs->kept);
	weft__pack_release(&fs->books);
	free(fs->book_slots);
	free(fs->book_root);
	free(fs);
}

void weft__metafs_unkeep(weft__metafs *fs)
{
	if (fs != NULL && fs->dist == NULL && !fs->replaying) {
		fs->keep = 0;
		fs->replayable = 0; /* nothing more to send or keep */
		weft__pack_release(&fs->kept);
		weft__pack_release(&fs->tape);
	}
}

int weft__metafs_take_kept(weft__metafs *fs, void **tape, size_t *len)
{
	*tape = NULL;
	*len = 0;
	if (fs == NULL || !fs->keep || !fs->replayable || fs->kept.failed || fs->error < 0)
		return 0;
	*tape = fs->kept.data;
	*len = fs->kept.len;
	fs->kept = (weft__pack){ 0 };
	return 1;
}

const void *weft__metafs_tape(const weft__metafs *fs, size_t *len)
{
	*len = fs->tape.len;
	return fs->tape.data;
}

int weft__metafs_replay_bytes(const void *tape, size_t len, weft__metafs **out)
{
	*out = calloc(1, sizeof **out);
	if (*out == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	weft__metafs *fs = *out;
	fs->replaying = fs->replayable = fs->begun = fs->ended = 1;
	weft__pack_raw(&fs->tape, tape, len);
	fs->next = (weft__unpack){ .data = fs->tape.data, .len = fs->tape.len };
	return fs->tape.failed ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory")
			       : 0;
}

/* ---- Messages ------------------------------------------------------------------- */

/* Rank 0: a message of `type` and two numbers, or with the compressed tape. */
static int send_message(weft__metafs *fs, enum meta_message type, uint64_t a, uint64_t b)
{
	weft__pack msg = { 0 };
	void *packed = NULL;
	size_t n = 0;
	int rc = 0;
	weft__pack_u64(&msg, type);
	if (type == MSG_DATA) {
		size_t bound = ZSTD_compressBound(fs->tape.len);
		packed = malloc(bound);
		n = packed ? ZSTD_compress(packed, bound, fs->tape.data, fs->tape.len, TAPE_LEVEL)
			   : 0;
		if (packed == NULL || ZSTD_isError(n))
			msg.failed = 1;
		else {
			weft__pack_u64(&msg, fs->tape.len);
			weft__pack_bytes(&msg, packed, n);
		}
		free(packed);
		fs->tape.len = 0;
	} else {
		weft__pack_u64(&msg, a);
		weft__pack_u64(&msg, b);
	}
	if (msg.failed) { /* still take part: an END that fails the others */
		rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory for "
				 "the trace's metadata");
		weft__pack_release(&msg);
		weft__pack_u64(&msg, MSG_END);
		weft__pack_u64(&msg, (uint64_t)(int64_t)WEFT_ENOMEM);
		weft__pack_u64(&msg, 0);
		fs->ended = 1;
	}
	/* A thread that replays the kept messages prefetches nothing. */
	if (fs->keep && type != MSG_PREFETCH)
		weft__pack_bytes(&fs->kept, msg.data, msg.len);
	int brc = fs->dist != NULL ? weft__dist_broadcast_pack(fs->dist, &msg, 0) : 0;
	weft__pack_release(&msg);
	return rc < 0 ? rc : brc;
}

/* The others: the next message into `msg` (its type; < 0 when none came). */
static int receive_message(weft__metafs *fs, weft__pack *msg, weft__unpack *u)
{
	weft__pack_release(msg);
	int rc = 0;
	if (fs->from_kept) {
		size_t len = 0;
		const void *bytes = weft__unpack_bytes(&fs->source, &len);
		weft__pack_raw(msg, bytes, len);
		if (msg->failed)
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	} else {
		rc = weft__dist_broadcast_pack(fs->dist, msg, 0);
	}
	*u = (weft__unpack){ .data = msg->data, .len = msg->len };
	uint64_t type = weft__unpack_u64(u);
	if (rc == 0 && !fs->from_kept && fs->keep && type != MSG_PREFETCH)
		weft__pack_bytes(&fs->kept, msg->data, msg->len);
	if (rc < 0)
		return rc;
	if (u->bad || type < MSG_BEGIN || type > MSG_PREFETCH)
		return weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
				   "rank 0 sent the trace's metadata in a message that does "
				   "not parse (a bug)");
	return (int)type;
}

/*
 * Replaying: the next chunk of the tape, or the END that says there is
 * none; 0 when a chunk came, else < 0 (message set).
 */
static int receive_chunk(weft__metafs *fs, const char *path)
{
	weft__pack msg = { 0 };
	weft__unpack u;
	int type = fs->ended ? MSG_END : receive_message(fs, &msg, &u);
	int rc = type < 0 ? type : 0;
	if (type == MSG_DATA) {
		uint64_t len = weft__unpack_u64(&u);
		size_t n = 0;
		const void *z = weft__unpack_bytes(&u, &n);
		fs->tape.len = 0;
		/* The length is checked against the frame's own before it is
		 * allocated (zstd writes the content size in the frame). */
		if (u.bad || ZSTD_getFrameContentSize(z, n) != len)
			rc = weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET, "the trace's "
					 "metadata from rank 0 does not parse (a bug)");
		else if (weft__array_grow((void **)&fs->tape.data, &fs->tape.cap, (size_t)len,
					  1) < 0)
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory for "
					 "the trace's metadata");
		else if (ZSTD_decompress(fs->tape.data, (size_t)len, z, n) != len)
			rc = weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET, "the trace's "
					 "metadata from rank 0 does not decompress (a bug)");
		fs->tape.len = rc == 0 ? (size_t)len : 0;
		fs->next = (weft__unpack){ .data = fs->tape.data, .len = fs->tape.len };
	} else if (type == MSG_END) {
		if (!fs->ended)
			fs->rank0_status = (int)(int64_t)weft__unpack_u64(&u);
		fs->ended = 1;
		rc = fs->rank0_status < 0
		     ? weft__error(WEFT_EIO, path, WEFT_NO_OFFSET, "rank 0 could not open the trace")
		     : weft__error(WEFT_EFORMAT, path, WEFT_NO_OFFSET, "opening the trace asked "
				   "more questions here than on rank 0 (a bug)");
	} else if (type > 0) {
		if (type == MSG_PREFETCH) /* still take part, with nothing */
			gather_books(fs, NULL, 0, NULL);
		rc = weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET, "rank 0 sent the trace's "
				 "metadata out of order (a bug)");
	}
	weft__pack_release(&msg);
	return rc;
}

int weft__metafs_begin(weft__metafs *fs, const weft_backend *backend)
{
	if (fs == NULL || fs->replaying || (fs->dist == NULL && !fs->keep))
		return 0;
	fs->begun = 1;
	fs->replayable = backend->stream_data_path != NULL;
	return send_message(fs, MSG_BEGIN, (uint64_t)backend->format, (uint64_t)fs->replayable);
}

/* Replaying: the messages left up to rank 0's END, whatever happened here. */
static void drain(weft__metafs *fs)
{
	while (!fs->ended) {
		weft__pack msg = { 0 };
		weft__unpack u;
		int type = receive_message(fs, &msg, &u);
		if (type == MSG_END)
			fs->rank0_status = (int)(int64_t)weft__unpack_u64(&u);
		if (type == MSG_PREFETCH) /* still take part, with nothing */
			gather_books(fs, NULL, 0, NULL);
		fs->ended = type < 0 || type == MSG_END || type == MSG_FAILED;
		weft__pack_release(&msg);
	}
}

/*
 * Takes BEGIN (or what says rank 0 failed) into a new replayer *out; sets
 * *replayable from BEGIN, also when this rank could not make the replayer
 * (every rank must take the same path after the open).
 */
static int start_replay(weft__metafs *proto, weft__metafs **out, int *format, int *replayable)
{
	weft__metafs *fs = malloc(sizeof *fs);
	weft__pack msg = { 0 };
	weft__unpack u;
	int rc = 0;
	if (fs == NULL) { /* still take part, then fail */
		fs = proto;
		rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	} else {
		*fs = *proto;
	}
	fs->replaying = fs->begun = 1;
	int type = receive_message(fs, &msg, &u);
	if (type == MSG_BEGIN) {
		*format = (int)weft__unpack_u64(&u);
		fs->replayable = weft__unpack_u64(&u) == 1;
		fs->ended = !fs->replayable; /* nothing more comes */
	} else {
		fs->ended = 1;
		if (rc == 0)
			rc = type < 0 ? type : weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
							   "rank 0 could not open the trace");
	}
	weft__pack_release(&msg);
	*replayable = fs->replayable;
	if (fs == proto) {
		drain(fs);
		weft__pack_release(&fs->kept);
		fs = NULL;
	}
	*out = fs;
	return rc;
}

int weft__metafs_replayer(const weft_dist *d, int keep, weft__metafs **out, int *format,
			  int *replayable)
{
	weft__metafs proto = { .dist = d, .keep = keep };
	return start_replay(&proto, out, format, replayable);
}

int weft__metafs_replayer_kept(const void *tape, size_t len, weft__metafs **out, int *format,
			       int *replayable)
{
	weft__metafs proto = { .from_kept = 1, .source = { .data = tape, .len = len } };
	return start_replay(&proto, out, format, replayable);
}

int weft__metafs_replayable(const weft__metafs *fs)
{
	return fs != NULL && fs->replayable;
}

int weft__metafs_booked(const weft__metafs *fs)
{
	return fs != NULL && fs->book_slots != NULL;
}

int weft__metafs_end(weft__metafs *fs, int rc)
{
	if (fs == NULL || (fs->dist == NULL && !fs->keep && !fs->from_kept))
		return rc;
	if (fs->replaying) {
		drain(fs);
		return rc;
	}
	if (rc == 0 && fs->error < 0)
		rc = fs->error;
	int src = 0;
	if (!fs->begun)
		src = send_message(fs, MSG_FAILED, 0, 0);
	else if (fs->replayable && !fs->ended && fs->tape.len > 0)
		src = send_message(fs, MSG_DATA, 0, 0);
	if (fs->begun && fs->replayable && !fs->ended) {
		int erc = send_message(fs, MSG_END, (uint64_t)(int64_t)(rc < 0 ? rc : src), 0);
		src = src < 0 ? src : erc;
	}
	fs->ended = 1;
	return rc < 0 ? rc : src;
}

/* ---- Recording and replaying ------------------------------------------------ */

/* Replaying met what it did not expect: a bug, said with the place. */
static int tape_broken(const weft__metafs *fs, const char *path)
{
	return weft__error(WEFT_EFORMAT, path, WEFT_NO_OFFSET,
			   "opening the trace asked another question here than on rank 0 "
			   "(a bug): byte %zu of its metadata tape", fs->next.pos);
}

/* Replaying: the next entry, which must be `op`; its errno. */
static int replay_entry(weft__metafs *fs, enum meta_op op, const char *path)
{
	if (fs->next.pos == fs->next.len && !fs->next.bad && (fs->dist != NULL || fs->from_kept)) {
		int rc = receive_chunk(fs, path);
		if (rc < 0)
			return rc;
	}
	uint64_t got = weft__unpack_u64(&fs->next);
	uint64_t err = weft__unpack_u64(&fs->next);
	if (fs->next.bad || got != op || err > 4095)
		return tape_broken(fs, path);
	return (int)err;
}

/* Recording: what a question is, and its answer, follow. */
static int recording(weft__metafs *fs)
{
	return fs != NULL && !fs->replaying &&
	       (fs->replayable || (fs->dist == NULL && !fs->keep));
}

/*
 * The start of an entry: the question and the errno of its answer. A book
 * also writes the question's key: the path (relative to its root), and
 * for reads what was asked (an answer must be to the same question).
 */
static void record_entry(weft__metafs *fs, enum meta_op op, int err, const char *path,
			 uint64_t max, int head)
{
	weft__pack_u64(&fs->tape, op);
	if (fs->book_root != NULL) {
		size_t n = strlen(fs->book_root);
		weft__pack_text(&fs->tape, strncmp(path, fs->book_root, n) == 0 ? path + n : path);
		weft__pack_u64(&fs->tape, max);
		weft__pack_u64(&fs->tape, (uint64_t)head);
	}
	weft__pack_u64(&fs->tape, (uint64_t)err);
}

/* An entry is whole: sent with the others once there are enough of them. */
static void record_done(weft__metafs *fs)
{
	if (fs->tape.failed && fs->error == 0)
		fs->error = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (fs->dist != NULL && fs->tape.len >= CHUNK_BYTES && !fs->ended) {
		int rc = send_message(fs, MSG_DATA, 0, 0);
		if (rc < 0 && fs->error == 0)
			fs->error = rc;
	}
}

/* ---- Books: what the other ranks asked for rank 0 ---------------------------- */

/*
 * Why: rank 0 alone asking the file system, one question after the
 * other, is about 19 calls per ovni stream: 2 minutes at 64,000 streams
 * and 0.1 ms a call. So, at a point of the open that the backend marks
 * (ovni: the trace's directory listed; Pallas: the main file read), rank
 * 0 sends PREFETCH and every other rank asks the questions of its share
 * of the items (ovni: loom directories; Pallas: archives) itself, writing them down with their answers in a book.
 * The books are gathered on rank 0, whose open then takes its answers
 * from them (and still records them on the tape as it asks): its
 * questions are the same, only fewer reach the file system. A question
 * that no book has is asked of the file system, so a missing or partial
 * book costs time, never a different trace.
 *
 * A book entry: the question (kind, path relative to the root, and for
 * reads the length asked and whether a head), its errno, and the answer
 * as on the tape. Rank 0 keeps a table of the entries by key.
 */

static uint64_t key_hash(enum meta_op op, const char *rel, uint64_t max, int head)
{
	uint64_t h = weft__hash_bytes(rel, strlen(rel));
	return (h ^ ((uint64_t)op << 56 ^ max << 1 ^ (uint64_t)head)) * 1099511628211ull;
}

/* Reads an entry's key at u (its kind already read). */
static void take_key(weft__unpack *u, const char **rel, uint64_t *max, int *head)
{
	*rel = weft__unpack_text(u);
	*max = weft__unpack_u64(u);
	*head = (int)weft__unpack_u64(u);
}

/* Skips an entry's errno and answer; 0 when it parses. */
static int skip_answer(weft__unpack *u, enum meta_op op)
{
	weft__unpack_u64(u); /* errno */
	if (op == OP_STAT) {
		weft__unpack_u64(u);
		weft__unpack_u64(u);
	} else if (op == OP_LIST) {
		uint64_t n = weft__unpack_u64(u);
		for (uint64_t i = 0; i < n && !u->bad; i++)
			weft__unpack_text(u);
	} else if (op == OP_READ) {
		weft__unpack_u64(u);
		if (weft__unpack_u64(u) != 0) {
			size_t n;
			weft__unpack_bytes(u, &n);
		}
	} else {
		u->bad = 1;
	}
	return u->bad ? -1 : 0;
}

/* Rank 0: a table of the entries of fs->books; what does not parse is left out. */
static int index_books(weft__metafs *fs)
{
	size_t entries = 0;
	weft__unpack u = { .data = fs->books.data, .len = fs->books.len };
	while (u.pos < u.len) {
		enum meta_op op = (enum meta_op)weft__unpack_u64(&u);
		const char *rel;
		uint64_t max;
		int head;
		take_key(&u, &rel, &max, &head);
		if (skip_answer(&u, op) < 0)
			break;
		entries++;
	}
	size_t n = 64;
	while (n < 2 * entries)
		n *= 2;
	fs->book_slots = calloc(n, sizeof *fs->book_slots);
	if (fs->book_slots == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	fs->book_slot_count = n;
	u = (weft__unpack){ .data = fs->books.data, .len = fs->books.len };
	for (size_t e = 0; e < entries; e++) {
		size_t at = u.pos;
		enum meta_op op = (enum meta_op)weft__unpack_u64(&u);
		const char *rel;
		uint64_t max;
		int head;
		take_key(&u, &rel, &max, &head);
		skip_answer(&u, op);
		size_t h = (size_t)key_hash(op, rel, max, head) & (n - 1);
		while (fs->book_slots[h] != 0)
			h = (h + 1) & (n - 1);
		fs->book_slots[h] = at + 1;
	}
	return 0;
}

/*
 * Rank 0: the book's answer to a question, in *answer (0 is returned), or
 * -1 when no book has it (ask the file system). A book's failed answer
 * counts as none: rank 0 asks again, so that a rank given another path (a
 * copy of another layout) cannot make streams that rank 0 listed vanish;
 * failures are rare in a sound trace.
 */
static int book_find(const weft__metafs *fs, enum meta_op op, const char *path, uint64_t max,
		     int head, weft__unpack *answer)
{
	if (fs == NULL || fs->book_slots == NULL)
		return -1;
	const char *rel = strlen(path) >= fs->books_root_len ? path + fs->books_root_len : path;
	size_t mask = fs->book_slot_count - 1;
	for (size_t h = (size_t)key_hash(op, rel, max, head) & mask; fs->book_slots[h] != 0;
	     h = (h + 1) & mask) {
		weft__unpack u = { .data = fs->books.data, .len = fs->books.len,
				   .pos = fs->book_slots[h] - 1 };
		const char *r;
		uint64_t m;
		int hd;
		enum meta_op o = (enum meta_op)weft__unpack_u64(&u);
		take_key(&u, &r, &m, &hd);
		if (o != op || m != max || hd != head || strcmp(r, rel) != 0)
			continue;
		uint64_t err = weft__unpack_u64(&u);
		if (u.bad || err != 0)
			return -1;
		*answer = u;
		return 0;
	}
	return -1;
}

/*
 * Collective: `len` bytes of this rank's book (zstd) to rank 0, whose
 * *all gets every book decompressed one after the other (NULL: rank 0
 * keeps none). A book that does not decompress, or for which there is no
 * memory, is left out (rank 0 asks the file system instead).
 */
static int gather_books(weft__metafs *fs, const void *book, size_t len, weft__pack *all)
{
	const weft_dist *d = fs->dist;
	size_t *lens = calloc((size_t)d->ranks, sizeof *lens);
	void *every = NULL;
	uint8_t none = 0;
	int rc = d->gather(d->user, book != NULL ? book : &none, book != NULL ? len : 0, &every,
			   lens != NULL ? lens : (size_t[1]){ 0 });
	if (rc == 0 && d->rank == 0 && all != NULL && lens != NULL && every != NULL) {
		const uint8_t *z = every;
		for (int r = 0; r < d->ranks; z += lens[r], r++) {
			unsigned long long raw = lens[r] ? ZSTD_getFrameContentSize(z, lens[r]) : 0;
			if (lens[r] == 0 || raw == ZSTD_CONTENTSIZE_ERROR ||
			    raw == ZSTD_CONTENTSIZE_UNKNOWN ||
			    weft__array_grow((void **)&all->data, &all->cap,
					     all->len + (size_t)raw, 1) < 0)
				continue;
			size_t got = ZSTD_decompress(all->data + all->len, (size_t)raw, z, lens[r]);
			if (!ZSTD_isError(got) && got == raw)
				all->len += got;
		}
	}
	free(every);
	free(lens);
	return rc;
}

/* This rank's book of its share of the items (every ranks - 1'th from its own), zstd. */
static void write_book(const weft__metafs *fs, const char *root, size_t count,
		       weft__metafs_prefetch_fn fn, void *arg, void **z, size_t *zlen)
{
	*z = NULL;
	*zlen = 0;
	weft__metafs book = { .book_root = strdup(root) };
	if (book.book_root == NULL)
		return;
	int others = fs->dist->ranks - 1;
	for (size_t i = (size_t)(fs->dist->rank - 1); i < count; i += (size_t)others)
		if (fn(&book, root, i, arg) < 0)
			break; /* what it has is good: rank 0 asks the rest */
	weft__error_clear(); /* a book's failures are not this open's */
	if (!book.tape.failed && book.tape.len > 0) {
		size_t bound = ZSTD_compressBound(book.tape.len);
		if ((*z = malloc(bound)) != NULL) {
			*zlen = ZSTD_compress(*z, bound, book.tape.data, book.tape.len, TAPE_LEVEL);
			if (ZSTD_isError(*zlen)) {
				free(*z);
				*z = NULL;
				*zlen = 0;
			}
		}
	}
	weft__pack_release(&book.tape);
	free(book.book_root);
}

int weft__metafs_prefetch(weft__metafs *fs, const char *root, size_t count,
			  weft__metafs_prefetch_fn fn, void *arg)
{
	if (fs == NULL || fs->dist == NULL || fs->dist->ranks < 2 || fs->from_kept ||
	    !fs->replayable || fs->ended)
		return 0;
	if (!fs->replaying) {
		/* Rank 0: the tape so far (the others replay up to here), then
		 * PREFETCH and the books. */
		int rc = fs->tape.len > 0 ? send_message(fs, MSG_DATA, 0, 0) : 0;
		if (rc == 0 && !fs->ended)
			rc = send_message(fs, MSG_PREFETCH, count, 0);
		if (rc < 0 || fs->ended)
			return rc;
		rc = gather_books(fs, NULL, 0, &fs->books);
		if (rc == 0 && fs->books.len > 0 && index_books(fs) == 0)
			fs->books_root_len = strlen(root);
		return rc;
	}
	/* The others: rank 0 sends PREFETCH here, or END when it failed. */
	if (fs->next.pos != fs->next.len)
		return tape_broken(fs, root);
	weft__pack msg = { 0 };
	weft__unpack u;
	int type = receive_message(fs, &msg, &u);
	int rc = type < 0 ? type : 0;
	if (type == MSG_PREFETCH) {
		void *z;
		size_t zlen;
		write_book(fs, root, count, fn, arg, &z, &zlen);
		rc = gather_books(fs, z, zlen, NULL);
		free(z);
	} else if (type == MSG_END) {
		fs->rank0_status = (int)(int64_t)weft__unpack_u64(&u);
		fs->ended = 1;
	} else if (type > 0) {
		rc = weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET, "rank 0 sent the trace's "
				 "metadata out of order (a bug)");
	}
	weft__pack_release(&msg);
	return rc;
}

/* ---- The three questions ------------------------------------------------------ */

/* stat(2) of `path`, reduced to what backends look at. */
static int stat_here(const char *path, int *kind, uint64_t *size)
{
	struct stat st;
	*kind = WEFT__META_MISSING;
	*size = 0;
	if (stat(path, &st) != 0)
		return errno ? errno : EIO;
	*kind = S_ISDIR(st.st_mode) ? WEFT__META_DIR
		: S_ISREG(st.st_mode) ? WEFT__META_FILE : WEFT__META_OTHER;
	*size = (uint64_t)st.st_size;
	return 0;
}

/* An answer to stat: the kind and size, from a tape or a book. */
static void take_stat(weft__unpack *u, int *kind, uint64_t *size)
{
	*kind = (int)weft__unpack_u64(u);
	*size = weft__unpack_u64(u);
}

int weft__metafs_stat(weft__metafs *fs, const char *path, int *kind, uint64_t *size)
{
	if (fs != NULL && fs->replaying) {
		int err = replay_entry(fs, OP_STAT, path);
		take_stat(&fs->next, kind, size);
		return err < 0 ? err : fs->next.bad ? tape_broken(fs, path) : err;
	}
	weft__unpack answer;
	int err = book_find(fs, OP_STAT, path, 0, 0, &answer);
	if (err >= 0) {
		take_stat(&answer, kind, size);
		if (answer.bad)
			err = stat_here(path, kind, size);
	} else {
		err = stat_here(path, kind, size);
	}
	if (recording(fs)) {
		record_entry(fs, OP_STAT, err, path, 0, 0);
		weft__pack_u64(&fs->tape, (uint64_t)*kind);
		weft__pack_u64(&fs->tape, *size);
		record_done(fs);
	}
	return err;
}

static int name_order(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void weft__metafs_names_free(char **names, size_t count)
{
	for (size_t i = 0; names != NULL && i < count; i++)
		free(names[i]);
	free(names);
}

/* Adds a copy of `name` to the list; 0 or WEFT_ENOMEM. */
static int names_add(char ***names, size_t *count, size_t *cap, const char *name)
{
	char *copy = strdup(name);
	if (copy == NULL || weft__array_grow((void **)names, cap, *count + 1, sizeof **names) < 0) {
		free(copy);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	(*names)[(*count)++] = copy;
	return 0;
}

/* The names in directory `path` but "." and "..", unsorted; errno or < 0. */
static int list_here(const char *path, char ***names, size_t *count)
{
	DIR *dir = opendir(path);
	size_t cap = 0;
	int rc = 0;
	if (dir == NULL)
		return errno ? errno : EIO;
	for (struct dirent *e; rc == 0 && (e = readdir(dir)) != NULL;)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			rc = names_add(names, count, &cap, e->d_name);
	closedir(dir);
	return rc;
}

/* An answer to list: the names, from a tape or a book; errno or < 0. */
static int take_list(weft__unpack *u, int err, char ***names, size_t *count)
{
	uint64_t n = err < 0 ? 0 : weft__unpack_u64(u);
	size_t cap = 0;
	for (uint64_t i = 0; err >= 0 && i < n && !u->bad; i++)
		err = names_add(names, count, &cap, weft__unpack_text(u));
	return err;
}

static void names_drop(char ***names, size_t *count)
{
	weft__metafs_names_free(*names, *count);
	*names = NULL;
	*count = 0;
}

int weft__metafs_list(weft__metafs *fs, const char *path, char ***names, size_t *count)
{
	*names = NULL;
	*count = 0;
	if (fs != NULL && fs->replaying) {
		int err = replay_entry(fs, OP_LIST, path);
		err = take_list(&fs->next, err, names, count);
		if (err >= 0 && fs->next.bad)
			err = tape_broken(fs, path);
		if (err < 0)
			names_drop(names, count);
		return err;
	}
	weft__unpack answer;
	int err = book_find(fs, OP_LIST, path, 0, 0, &answer);
	if (err >= 0) {
		err = take_list(&answer, err, names, count);
		if (err >= 0 && answer.bad) {
			names_drop(names, count);
			err = list_here(path, names, count);
		}
	} else {
		err = list_here(path, names, count);
	}
	if (err < 0) {
		names_drop(names, count);
		return err;
	}
	if (*count > 1) /* qsort() wants a base even for none */
		qsort(*names, *count, sizeof **names, name_order);
	if (recording(fs)) {
		record_entry(fs, OP_LIST, err, path, 0, 0);
		weft__pack_u64(&fs->tape, *count);
		for (size_t i = 0; i < *count; i++)
			weft__pack_text(&fs->tape, (*names)[i]);
		record_done(fs);
	}
	return err;
}

/*
 * Up to `max` bytes of `path` into a new NUL-terminated buffer; with
 * `head` unset a file of more than `max` bytes is not read (*bytes NULL,
 * *size its size). errno or < 0.
 */
static int read_here(const char *path, size_t max, int head, char **bytes, size_t *len,
		     uint64_t *size)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno ? errno : EIO;
	if (fstat(fd, &st) != 0) {
		int err = errno ? errno : EIO;
		close(fd);
		return err;
	}
	*size = (uint64_t)st.st_size;
	if (!head && *size > max) {
		close(fd);
		return 0;
	}
	/* One more byte than wanted tells a file that grew past `max`; the
	 * buffer starts at the size (so a small file costs a small one) and
	 * grows if the file does while it is read. */
	size_t want = head ? max : max + 1;
	size_t cap = (*size < want ? (size_t)*size : want) + 1, got = 0;
	char *buf = malloc(cap + 1);
	int err = 0;
	while (buf != NULL && got < want) {
		if (got == cap) {
			size_t more = cap > want - cap ? want : 2 * cap;
			char *grown = realloc(buf, more + 1);
			if (grown == NULL) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
			cap = more;
		}
		ssize_t n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? (errno ? errno : EIO) : 0;
			break;
		}
		got += (size_t)n;
	}
	if (buf == NULL) {
		close(fd);
		return weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	}
	close(fd);
	if (err == 0 && !head && got > max) {
		*size = got; /* it grew while read: too large after all */
		free(buf);
		return 0;
	}
	if (err != 0) {
		free(buf);
		return err;
	}
	buf[got] = '\0';
	*bytes = buf;
	*len = got;
	return 0;
}

/* An answer to read: the size and the bytes, from a tape or a book; errno or < 0. */
static int take_read(weft__unpack *u, int err, const char *path, char **bytes, size_t *len,
		     uint64_t *size)
{
	*size = err < 0 ? 0 : weft__unpack_u64(u);
	uint64_t there = err < 0 ? 0 : weft__unpack_u64(u);
	size_t n = 0;
	const void *b = there ? weft__unpack_bytes(u, &n) : NULL;
	if (err != 0 || !there || u->bad)
		return err;
	if ((*bytes = malloc(n + 1)) == NULL)
		return weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	memcpy(*bytes, b, n);
	(*bytes)[n] = '\0';
	*len = n;
	return 0;
}

int weft__metafs_read(weft__metafs *fs, const char *path, size_t max, int head, char **bytes,
		      size_t *len, uint64_t *size)
{
	*bytes = NULL;
	*len = 0;
	*size = 0;
	if (fs != NULL && fs->replaying) {
		int err = replay_entry(fs, OP_READ, path);
		err = take_read(&fs->next, err, path, bytes, len, size);
		if (err >= 0 && fs->next.bad) {
			free(*bytes);
			*bytes = NULL;
			return tape_broken(fs, path);
		}
		return err;
	}
	weft__unpack answer;
	int err = book_find(fs, OP_READ, path, max, head, &answer);
	if (err >= 0) {
		err = take_read(&answer, err, path, bytes, len, size);
		if (err >= 0 && answer.bad) {
			free(*bytes);
			*bytes = NULL;
			*len = 0;
			err = read_here(path, max, head, bytes, len, size);
		}
	} else {
		err = read_here(path, max, head, bytes, len, size);
	}
	if (err < 0)
		return err;
	if (recording(fs)) {
		record_entry(fs, OP_READ, err, path, max, head);
		weft__pack_u64(&fs->tape, *size);
		weft__pack_u64(&fs->tape, *bytes != NULL);
		if (*bytes != NULL)
			weft__pack_bytes(&fs->tape, *bytes, *len);
		record_done(fs);
	}
	return err;
}
