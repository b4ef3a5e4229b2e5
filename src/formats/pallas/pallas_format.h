/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_format.h - facts of the Pallas 0.20 on-disk format
 * shared by the reader and the writer: version, settings, record kinds,
 * tokens, file names. See docs/pallas.md for the byte layout.
 *
 * Every multi-byte value is little-endian; counts and sizes are u64,
 * references and ids u32, strings are stored with their NUL.
 */
#ifndef WEFT_PALLAS_FORMAT_H
#define WEFT_PALLAS_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define WEFT_PALLAS_VERSION 20           /* first byte of the main file */
#define WEFT_PALLAS_SETTINGS_SIZE 32     /* settings, fields without padding */
#define WEFT_PALLAS_SUBARRAY_VALUES 1000 /* values per sub-array written */
#define WEFT_PALLAS_NO_REF 0xFFFFFFFFu   /* the seed's -1 (root parent) */

/* File names inside a trace directory. */
#define WEFT_PALLAS_ARCHIVE_FMT "archive_%u"
#define WEFT_PALLAS_ARCHIVE_FILE "archive.pallas"
#define WEFT_PALLAS_THREAD_FMT "thread_%u"
#define WEFT_PALLAS_THREAD_FILE "thread.pallas"
#define WEFT_PALLAS_EVENT_DATA "event_durations.dat"
#define WEFT_PALLAS_SEQUENCE_DATA "sequence_durations.dat"

/* ---- Settings --------------------------------------------------------------- */

enum weft_pallas_compression {
	WEFT_PALLAS_COMPRESS_NONE = 0,
	WEFT_PALLAS_COMPRESS_ZSTD = 1,
	WEFT_PALLAS_COMPRESS_HISTOGRAM = 2, /* lossy */
	WEFT_PALLAS_COMPRESS_SZ = 3,        /* lossy */
	WEFT_PALLAS_COMPRESS_ZFP = 4,       /* lossy */
	WEFT_PALLAS_COMPRESS_ZSTD_HISTOGRAM = 5 /* lossy */
};

enum weft_pallas_encoding {
	WEFT_PALLAS_ENCODE_NONE = 0,
	WEFT_PALLAS_ENCODE_MASKING = 1,      /* low bytes of each value */
	WEFT_PALLAS_ENCODE_LEADING_ZEROES = 2 /* never implemented by Pallas */
};

enum weft_pallas_loop_finding {
	WEFT_PALLAS_LOOPS_NONE = 0,
	WEFT_PALLAS_LOOPS_BASIC = 1,
	WEFT_PALLAS_LOOPS_BASIC_TRUNCATED = 2
};

enum weft_pallas_timestamp_storage {
	WEFT_PALLAS_TS_NONE = 0,
	WEFT_PALLAS_TS_DELTA = 1,     /* recorded only: values are absolute */
	WEFT_PALLAS_TS_TIMESTAMP = 2
};

/* The 32-byte settings block that follows the version byte. */
typedef struct weft_pallas_settings {
	int32_t compression;      /* enum weft_pallas_compression */
	int32_t encoding;         /* enum weft_pallas_encoding */
	uint64_t zstd_level;
	int32_t loop_finding;     /* enum weft_pallas_loop_finding */
	uint64_t max_loop_length;
	int32_t timestamp_storage; /* enum weft_pallas_timestamp_storage */
} weft_pallas_settings;

/* ---- Tokens ------------------------------------------------------------------- */

enum weft_pallas_token_type {
	WEFT_PALLAS_TOKEN_INVALID = 0,
	WEFT_PALLAS_TOKEN_EVENT = 1,
	WEFT_PALLAS_TOKEN_SEQUENCE = 2,
	WEFT_PALLAS_TOKEN_LOOP = 3
};

#define WEFT_PALLAS_TOKEN_ID_INVALID 0x3FFFFFFFu
/* A token is a u32: type in the low 2 bits, id in the high 30. */
#define WEFT_PALLAS_TOKEN(type, id) ((uint32_t)(type) | ((uint32_t)(id) << 2))
#define WEFT_PALLAS_TOKEN_TYPE(tok) ((uint32_t)(tok) & 3u)
#define WEFT_PALLAS_TOKEN_IDX(tok) ((uint32_t)(tok) >> 2)
/* What dead loop slots hold as their repeated token. */
#define WEFT_PALLAS_TOKEN_NONE \
	WEFT_PALLAS_TOKEN(WEFT_PALLAS_TOKEN_INVALID, WEFT_PALLAS_TOKEN_ID_INVALID)

enum weft_pallas_sequence_type {
	WEFT_PALLAS_SEQUENCE_BLOCK = 0,
	WEFT_PALLAS_SEQUENCE_LOOP = 1
};

/* ---- Records (event kinds) ---------------------------------------------------- */

enum weft_pallas_record {
	WEFT_PALLAS_REC_INVALID = 0,
	WEFT_PALLAS_REC_MEASUREMENT_ON_OFF = 1,
	WEFT_PALLAS_REC_ENTER = 2,
	WEFT_PALLAS_REC_LEAVE = 3,
	WEFT_PALLAS_REC_MPI_SEND = 4,
	WEFT_PALLAS_REC_MPI_ISEND = 5,
	WEFT_PALLAS_REC_MPI_ISEND_COMPLETE = 6,
	WEFT_PALLAS_REC_MPI_IRECV_REQUEST = 7,
	WEFT_PALLAS_REC_MPI_RECV = 8,
	WEFT_PALLAS_REC_MPI_IRECV = 9,
	WEFT_PALLAS_REC_MPI_REQUEST_TEST = 10,
	WEFT_PALLAS_REC_MPI_REQUEST_CANCELLED = 11,
	WEFT_PALLAS_REC_MPI_COLLECTIVE_BEGIN = 12,
	WEFT_PALLAS_REC_MPI_COLLECTIVE_END = 13,
	WEFT_PALLAS_REC_OMP_FORK = 14,
	WEFT_PALLAS_REC_OMP_JOIN = 15,
	WEFT_PALLAS_REC_OMP_ACQUIRE_LOCK = 16,
	WEFT_PALLAS_REC_OMP_RELEASE_LOCK = 17,
	WEFT_PALLAS_REC_OMP_TASK_CREATE = 18,
	WEFT_PALLAS_REC_OMP_TASK_SWITCH = 19,
	WEFT_PALLAS_REC_OMP_TASK_COMPLETE = 20,
	WEFT_PALLAS_REC_METRIC = 21,
	WEFT_PALLAS_REC_PARAMETER_STRING = 22,
	WEFT_PALLAS_REC_PARAMETER_INT = 23,
	WEFT_PALLAS_REC_PARAMETER_UNSIGNED_INT = 24,
	WEFT_PALLAS_REC_THREAD_FORK = 25,
	WEFT_PALLAS_REC_THREAD_JOIN = 26,
	WEFT_PALLAS_REC_THREAD_TEAM_BEGIN = 27,
	WEFT_PALLAS_REC_THREAD_TEAM_END = 28,
	WEFT_PALLAS_REC_THREAD_ACQUIRE_LOCK = 29,
	WEFT_PALLAS_REC_THREAD_RELEASE_LOCK = 30,
	WEFT_PALLAS_REC_THREAD_TASK_CREATE = 31,
	WEFT_PALLAS_REC_THREAD_TASK_SWITCH = 32,
	WEFT_PALLAS_REC_THREAD_TASK_COMPLETE = 33,
	WEFT_PALLAS_REC_THREAD_CREATE = 34,
	WEFT_PALLAS_REC_THREAD_BEGIN = 35,
	WEFT_PALLAS_REC_THREAD_WAIT = 36,
	WEFT_PALLAS_REC_THREAD_END = 37,
	WEFT_PALLAS_REC_IO_CREATE_HANDLE = 38,
	WEFT_PALLAS_REC_IO_DESTROY_HANDLE = 39,
	WEFT_PALLAS_REC_IO_DUPLICATE_HANDLE = 40,
	WEFT_PALLAS_REC_IO_SEEK = 41,
	WEFT_PALLAS_REC_IO_CHANGE_STATUS_FLAGS = 42,
	WEFT_PALLAS_REC_IO_DELETE_FILE = 43,
	WEFT_PALLAS_REC_IO_OPERATION_BEGIN = 44,
	WEFT_PALLAS_REC_IO_OPERATION_TEST = 45,
	WEFT_PALLAS_REC_IO_OPERATION_ISSUED = 46,
	WEFT_PALLAS_REC_IO_OPERATION_COMPLETE = 47,
	WEFT_PALLAS_REC_IO_OPERATION_CANCELLED = 48,
	WEFT_PALLAS_REC_IO_ACQUIRE_LOCK = 49,
	WEFT_PALLAS_REC_IO_RELEASE_LOCK = 50,
	WEFT_PALLAS_REC_IO_TRY_LOCK = 51,
	WEFT_PALLAS_REC_PROGRAM_BEGIN = 52,
	WEFT_PALLAS_REC_PROGRAM_END = 53,
	WEFT_PALLAS_REC_NON_BLOCKING_COLLECTIVE_REQUEST = 54,
	WEFT_PALLAS_REC_NON_BLOCKING_COLLECTIVE_COMPLETE = 55,
	WEFT_PALLAS_REC_COMM_CREATE = 56,
	WEFT_PALLAS_REC_COMM_DESTROY = 57,
	WEFT_PALLAS_REC_GENERIC = 58,
	WEFT_PALLAS_REC_BUFFER_FLUSH = 59,
	WEFT_PALLAS_REC_COUNT = 60
};

/*
 * The bytes an event stores before its payload: i32 record, u8 event_size
 * (event_size counts these 5 bytes and the payload).
 */
#define WEFT_PALLAS_EVENT_HEADER 5
#define WEFT_PALLAS_EVENT_MAX_PAYLOAD (255 - WEFT_PALLAS_EVENT_HEADER)

/* Attribute types (u8 in attribute definitions), as Pallas numbers them. */
enum weft_pallas_attr_type {
	WEFT_PALLAS_ATTR_NONE = 0,
	WEFT_PALLAS_ATTR_UINT8 = 1,
	WEFT_PALLAS_ATTR_UINT16 = 2,
	WEFT_PALLAS_ATTR_UINT32 = 3,
	WEFT_PALLAS_ATTR_UINT64 = 4,
	WEFT_PALLAS_ATTR_INT8 = 5,
	WEFT_PALLAS_ATTR_INT16 = 6,
	WEFT_PALLAS_ATTR_INT32 = 7,
	WEFT_PALLAS_ATTR_INT64 = 8,
	WEFT_PALLAS_ATTR_FLOAT = 9,
	WEFT_PALLAS_ATTR_DOUBLE = 10,
	WEFT_PALLAS_ATTR_STRING = 11,      /* a u32 string ref */
	WEFT_PALLAS_ATTR_ATTRIBUTE = 12,   /* u32 refs from here on */
	WEFT_PALLAS_ATTR_LOCATION = 13,
	WEFT_PALLAS_ATTR_REGION = 14,
	WEFT_PALLAS_ATTR_GROUP = 15,
	WEFT_PALLAS_ATTR_METRIC = 16,
	WEFT_PALLAS_ATTR_COMM = 17,
	WEFT_PALLAS_ATTR_PARAMETER = 18,
	WEFT_PALLAS_ATTR_RMA_WIN = 19,
	WEFT_PALLAS_ATTR_SOURCE_CODE_LOCATION = 20,
	WEFT_PALLAS_ATTR_CALLING_CONTEXT = 21,
	WEFT_PALLAS_ATTR_INTERRUPT_GENERATOR = 22,
	WEFT_PALLAS_ATTR_IO_FILE = 23,
	WEFT_PALLAS_ATTR_IO_HANDLE = 24,
	WEFT_PALLAS_ATTR_LOCATION_GROUP = 25
};

/*
 * The name of a record kind as weft shows it (the event `code`), e.g.
 * "Enter", "MPI_Send"; NULL for numbers outside the table.
 */
const char *weft__pallas_record_name(int32_t record);

/*
 * weft only (appended by the writer): the settings' timestamp storage
 * value of a trace whose timestamp sub-arrays (event timestamps and
 * sequence start timestamps, not durations) hold their first value then
 * the differences v[i] - v[i-1] (u64, wrapping), before compression. The
 * sub-array headers (first, last) stay absolute. Pallas 0.20 cannot read
 * such traces (weft_pallas_write_options.delta_timestamps).
 */
#define WEFT_PALLAS_TS_WEFT_DELTA 3

#endif /* WEFT_PALLAS_FORMAT_H */
