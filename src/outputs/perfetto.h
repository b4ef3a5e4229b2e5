/* SPDX-License-Identifier: MIT */
/*
 * outputs/perfetto.h - the Perfetto native protobuf trace (.pftrace), a
 * sink of the view layer (outputs/view.h), encoded by hand (no protobuf
 * library) and streamed packet by packet.
 *
 * The file is a sequence of `0x0A <varint length> <TracePacket>` records
 * (the repeated field 1 of Perfetto's Trace message), all on one
 * trusted_packet_sequence_id (WEFT__PERFETTO_SEQUENCE_ID):
 *   - a TrackDescriptor packet per view track, when the view declares it:
 *     PROCESS -> process {pid, process_name}; THREAD -> thread {pid, tid,
 *     thread_name} under its process; CHANNEL and STATE -> a named track
 *     under its thread; COUNTER -> a named counter track under its thread.
 *     Track uuids are a base (0 by default) + the view's track id; pids
 *     and tids are the view's (int32, never 0);
 *   - a TrackEvent packet per begin (type 1), end (type 2), instant
 *     (type 3) and counter value (type 4, double_counter_value); a
 *     complete span is a begin and an end packet. Timestamps in ns;
 *   - names, categories and annotation names are interned (InternedData
 *     in the packet that first uses them); the item's fields become debug
 *     annotations, and flagged items get a bool annotation "clipped" or
 *     "unclosed".
 * The mapping and the limits are in docs/perfetto.md.
 *
 * Memory: the intern tables (names seen so far, bounded: past the limit
 * the incremental state is cleared and interning starts again), a few
 * bytes per track, the output buffer (two with a writer thread) and a
 * scratch buffer as large as the largest packet; nothing per event.
 *
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_PERFETTO_H
#define WEFT_OUTPUTS_PERFETTO_H

#include <stddef.h>
#include <stdint.h>

#include "outputs/view.h"

/* The trusted_packet_sequence_id of every packet (default). */
#define WEFT__PERFETTO_SEQUENCE_ID 1u
/* Track uuid = this + the view's track id (default: small uuids, short
 * varints in every event). */
#define WEFT__PERFETTO_UUID_BASE 0ull
/* Default bound of the intern tables, in bytes (each string's bytes plus
 * 64 for its slot share and overhead). */
#define WEFT__PERFETTO_INTERN_LIMIT (64u << 20)

typedef struct weft__perfetto_writer weft__perfetto_writer;

/* A writer to fd (not closed by it). WEFT_ENOMEM with message on failure. */
int weft__perfetto_writer_create(int fd, weft__perfetto_writer **out);

/* How the output is written (zero-initialise: inline writes). */
typedef struct weft__perfetto_options {
	/* 1: when fd is a regular file, a second thread writes the buffers
	 * (outputs/bg_writer.c) while the next one is encoded. */
	int background;
	/* Background mode, for an output synced (fsync) at the end anyway:
	 * written to the disk as it goes and dropped from the page cache
	 * once there (see weft__bg_writer_start_positioned). Measured: with
	 * a final fsync, background + write_behind is the fastest; without
	 * one, inline writes are (docs/perfetto.md). */
	int write_behind;
} weft__perfetto_options;

/* The same with options (NULL: inline writes, as _create). */
int weft__perfetto_writer_create_with(int fd, const weft__perfetto_options *options,
				      weft__perfetto_writer **out);
/* The sink to give to weft__view_create (valid as long as the writer). */
const weft__view_sink *weft__perfetto_writer_sink(weft__perfetto_writer *w);
/*
 * Flushes everything; 0, or WEFT_EIO (message set) when a write failed,
 * or WEFT_ENOMEM (message set) when an event could not be encoded for
 * want of memory (it was left out).
 */
int weft__perfetto_writer_finish(weft__perfetto_writer *w);
/* Releases the writer (nothing is flushed). NULL is accepted. */
void weft__perfetto_writer_free(weft__perfetto_writer *w);

/*
 * Sets the sequence id and the track uuid base (defaults above), before
 * the first packet: files written with distinct ids and bases can be
 * concatenated into one trace.
 */
void weft__perfetto_writer_set_ids(weft__perfetto_writer *w, uint32_t sequence_id,
				   uint64_t uuid_base);

/*
 * Sets the bound of the intern tables in bytes (default
 * WEFT__PERFETTO_INTERN_LIMIT): when the tables hold more, the next
 * packet that interns clears the sequence's incremental state and the
 * tables start again. For tests and memory-tight callers.
 */
void weft__perfetto_writer_set_intern_limit(weft__perfetto_writer *w, size_t bytes);

/* What the writer did, for the command's report and the tests. */
typedef struct weft__perfetto_stats {
	uint64_t packets;        /* TracePackets written */
	uint64_t tracks;         /* TrackDescriptor packets */
	uint64_t interned;       /* strings interned (all tables, all resets) */
	uint64_t intern_resets;  /* times the incremental state was cleared again */
	uint64_t bytes;          /* bytes written (or to be written) */
} weft__perfetto_stats;

/* The counts so far. */
void weft__perfetto_writer_stats(const weft__perfetto_writer *w, weft__perfetto_stats *out);

#endif /* WEFT_OUTPUTS_PERFETTO_H */
