/* SPDX-License-Identifier: MIT */
/*
 * test_libovni_meta - the stream.json files written by the drop-in
 * libovni: the keys of libovni 1.14 in its order, the initial file
 * without "finished" (written at ovni_thread_init), rank/nranks,
 * loom_cpus only in the stream of the thread that added them, marks,
 * user attributes of every type (and the ovni_attr_get_* values), and
 * the OVNI_TMPDIR mode that moves the streams into the trace at close.
 */
#include <pthread.h>
#include <sys/wait.h>

#include "test_libovni_common.h"

#define LOOM "testhost.meta"

/* The keys of the "ovni" object, in order, joined by spaces. */
static void
ovni_keys(json_t *root, char *out, size_t n)
{
	json_t *o = json_object_get(root, "ovni");
	const char *key;
	json_t *v;
	out[0] = '\0';
	json_object_foreach(o, key, v) {
		(void) v;
		strncat(out, key, n - strlen(out) - 1);
		strncat(out, " ", n - strlen(out) - 1);
	}
}

/* What every stream of this test carries, finished or not. */
static void
check_common(json_t *j, pid_t tid)
{
	CHECK_EQ_I64(jint(j, "version"), 3);
	CHECK_EQ_STR(jstr(j, "ovni.lib.version"), "1.14.0");
	CHECK(json_is_string(jget(j, "ovni.lib.commit")));
	CHECK_EQ_STR(jstr(j, "ovni.part"), "thread");
	CHECK_EQ_I64(jint(j, "ovni.tid"), tid);
	CHECK_EQ_I64(jint(j, "ovni.pid"), getpid());
	CHECK_EQ_STR(jstr(j, "ovni.loom"), LOOM);
	CHECK_EQ_I64(jint(j, "ovni.app_id"), 3);
	CHECK_EQ_STR(jstr(j, "ovni.require.ovni"), "1.1.0");
}

/* Every attribute type, read back through the API and from the file. */
static void
check_attributes(const char *sdir)
{
	ovni_attr_set_double("test.num", 2.5);
	ovni_attr_set_boolean("test.yes", 1);
	ovni_attr_set_boolean("test.no", 0);
	ovni_attr_set_str("test.str", "hello \"world\"");
	ovni_attr_set_json("test.obj", "{\"a\": [1, 2, {\"b\": null}], \"c\": \"d\"}");
	ovni_attr_set_json("test.scalar", "42");
	ovni_attr_set_boolean("nosv.can_breakdown", 1);
	ovni_attr_set_double("test.over", 1);
	ovni_attr_set_str("test.over", "replaced");

	CHECK(ovni_attr_get_double("test.num") == 2.5);
	CHECK(ovni_attr_get_double("test.scalar") == 42.0);
	CHECK_EQ_I64(ovni_attr_get_boolean("test.yes"), 1);
	CHECK_EQ_I64(ovni_attr_get_boolean("test.no"), 0);
	CHECK_EQ_STR(ovni_attr_get_str("test.str"), "hello \"world\"");
	CHECK_EQ_STR(ovni_attr_get_str("test.over"), "replaced");
	CHECK(ovni_attr_has("test.num"));
	CHECK(ovni_attr_has("test.obj.a"));
	CHECK(ovni_attr_has("ovni.tid"));
	CHECK(!ovni_attr_has("test.missing"));
	CHECK(!ovni_attr_has("missing.deeper.key"));
	CHECK(!ovni_attr_has("test.num.below"));

	char *text = ovni_attr_get_json("test.obj");
	json_t *got = json_loads(text, 0, NULL);
	json_t *want = json_loads("{\"a\":[1,2,{\"b\":null}],\"c\":\"d\"}", 0, NULL);
	CHECK(got != NULL && json_equal(got, want));
	json_decref(got);
	json_decref(want);
	free(text);
	text = ovni_attr_get_json("test.str");
	CHECK_EQ_STR(text, "\"hello \\\"world\\\"\"");
	free(text);

	/* ovni_attr_flush puts them on disk before the stream is closed. */
	ovni_attr_flush();
	json_t *j = load_stream_json(sdir);
	REQUIRE(j != NULL);
	CHECK(json_real_value(jget(j, "test.num")) == 2.5);
	CHECK(json_is_true(jget(j, "test.yes")));
	CHECK(json_is_false(jget(j, "test.no")));
	CHECK_EQ_STR(jstr(j, "test.str"), "hello \"world\"");
	json_t *arr = jget(j, "test.obj.a");
	CHECK(json_array_size(arr) == 3
	      && json_is_null(json_object_get(json_array_get(arr, 2), "b")));
	CHECK_EQ_I64(jint(j, "test.scalar"), 42);
	CHECK(json_is_true(jget(j, "nosv.can_breakdown")));
	CHECK(jget(j, "ovni.finished") == NULL);
	json_decref(j);
}

/* The two mark types of the reference trace ovni-mark-4procs. */
static void
define_marks(void)
{
	ovni_mark_type(1, 0, "Progress");
	ovni_mark_type(2, OVNI_MARK_STACK, "Colors");
	ovni_mark_label(2, 1, "Blue");
	ovni_mark_label(2, 2, "Gray");
	ovni_mark_label(2, 2, "Gray"); /* the same label again is fine */
}

/* ovni.mark as libovni 1.14 writes it. */
static void
check_marks(json_t *j)
{
	CHECK_EQ_STR(jstr(j, "ovni.mark.1.title"), "Progress");
	CHECK_EQ_STR(jstr(j, "ovni.mark.1.chan_type"), "single");
	CHECK(jget(j, "ovni.mark.1.labels") == NULL);
	CHECK_EQ_STR(jstr(j, "ovni.mark.2.title"), "Colors");
	CHECK_EQ_STR(jstr(j, "ovni.mark.2.chan_type"), "stack");
	CHECK_EQ_STR(jstr(j, "ovni.mark.2.labels.1"), "Blue");
	CHECK_EQ_STR(jstr(j, "ovni.mark.2.labels.2"), "Gray");
}

static pid_t other_tid;

/* A second thread: no CPUs, no marks, no rank (libovni writes rank and
 * nranks in the stream of the thread that set them). */
static void *
other_thread(void *arg)
{
	(void) arg;
	other_tid = test_gettid();
	ovni_thread_init(other_tid);
	struct ovni_ev ev = { 0 };
	ovni_ev_set_mcv(&ev, "OB.");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_emit(&ev);
	ovni_thread_free();
	return NULL;
}

/* The CPUs added by the main thread, in order. */
static void
check_loom_cpus(json_t *j)
{
	json_t *cpus = jget(j, "ovni.loom_cpus");
	REQUIRE(json_is_array(cpus));
	CHECK_EQ_U64(json_array_size(cpus), 2);
	CHECK_EQ_I64(jint(json_array_get(cpus, 0), "index"), 0);
	CHECK_EQ_I64(jint(json_array_get(cpus, 0), "phyid"), 0);
	CHECK_EQ_I64(jint(json_array_get(cpus, 1), "index"), 1);
	CHECK_EQ_I64(jint(json_array_get(cpus, 1), "phyid"), 2);
}

/* Main part: one process, two threads. */
static void
test_streams(const char *dir)
{
	char sdir[4096], keys[512];
	pid_t tid = test_gettid();
	const char *v, *c;

	ovni_version_get(&v, &c);
	CHECK_EQ_STR(v, "1.14.0");
	CHECK(c != NULL && c[0] != '\0');
	ovni_version_check_str("1.0.0");
	ovni_version_check_str("1.14.9");

	ovni_proc_init(3, LOOM, getpid());
	ovni_thread_init(tid);
	ovni_proc_set_rank(2, 5);
	stream_dir(sdir, sizeof(sdir), dir, LOOM, getpid(), tid);

	/* The initial stream.json: a crash now would leave it unfinished. */
	json_t *j = load_stream_json(sdir);
	REQUIRE(j != NULL);
	check_common(j, tid);
	CHECK(jget(j, "ovni.finished") == NULL);
	ovni_keys(j, keys, sizeof(keys));
	CHECK_EQ_STR(keys, "lib part tid pid loom app_id require ");
	json_decref(j);

	ovni_thread_require("nosv", "2.7.0");
	ovni_thread_require("mpi", "1.0.0");
	ovni_add_cpu(0, 0);
	ovni_add_cpu(1, 2);
	define_marks();
	check_attributes(sdir);

	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, other_thread, NULL) == 0);
	pthread_join(th, NULL);
	ovni_thread_free();
	ovni_proc_fini();

	j = load_stream_json(sdir);
	REQUIRE(j != NULL);
	check_common(j, tid);
	CHECK_EQ_STR(jstr(j, "ovni.require.ovni"), OVNI_MODEL_VERSION);
	CHECK_EQ_STR(OVNI_MODEL_VERSION, "1.1.0"); /* ovni.h of libovni 1.14 */
	CHECK_EQ_STR(jstr(j, "ovni.require.nosv"), "2.7.0");
	CHECK_EQ_STR(jstr(j, "ovni.require.mpi"), "1.0.0");
	CHECK_EQ_I64(jint(j, "ovni.rank"), 2);
	CHECK_EQ_I64(jint(j, "ovni.nranks"), 5);
	CHECK_EQ_I64(jint(j, "ovni.finished"), 1);
	check_loom_cpus(j);
	check_marks(j);
	ovni_keys(j, keys, sizeof(keys));
	CHECK_EQ_STR(keys, "lib part tid pid loom app_id require mark rank nranks loom_cpus finished ");
	json_decref(j);

	stream_dir(sdir, sizeof(sdir), dir, LOOM, getpid(), other_tid);
	j = load_stream_json(sdir);
	REQUIRE(j != NULL);
	check_common(j, other_tid);
	CHECK(jget(j, "ovni.rank") == NULL && jget(j, "ovni.nranks") == NULL);
	CHECK(jget(j, "ovni.loom_cpus") == NULL);
	CHECK(jget(j, "ovni.mark") == NULL);
	CHECK_EQ_I64(jint(j, "ovni.finished"), 1);
	json_decref(j);

	/* weft sees both streams, finished. */
	weft_trace *t = weft_open_checked(dir);
	CHECK_EQ_U64(weft_trace_stream_count(t), 2);
	for (size_t i = 0; i < weft_trace_stream_count(t); i++)
		CHECK_EQ_I64(weft_trace_stream(t, i)->finished, 1);
	weft_trace_free(t);
}

/* True when path exists. */
static int
exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* OVNI_TMPDIR (in a child: a process initializes once): streams live in
 * the temporary directory while open, then move into the trace. */
static void
tmpdir_child(const char *final, const char *tmp)
{
	char path[4096];
	pid_t tid = test_gettid();

	setenv("OVNI_TRACEDIR", final, 1);
	setenv("OVNI_TMPDIR", tmp, 1);
	ovni_proc_init(1, LOOM, getpid());
	ovni_thread_init(tid);
	stream_dir(path, sizeof(path), tmp, LOOM, getpid(), tid);
	strcat(path, "/stream.obs");
	CHECK(exists(path));
	stream_dir(path, sizeof(path), final, LOOM, getpid(), tid);
	strcat(path, "/stream.obs");
	CHECK(!exists(path));
	struct ovni_ev ev = { 0 };
	ovni_ev_set_mcv(&ev, "OB.");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_emit(&ev);
	ovni_thread_free();
	CHECK(exists(path));
	ovni_proc_fini();
	snprintf(path, sizeof(path), "%s/loom.%s", tmp, LOOM);
	CHECK(!exists(path)); /* emptied and removed */
	exit(tu_failures ? 1 : 0);
}

/* Runs the OVNI_TMPDIR child, then reads the final trace. */
static void
test_tmpdir(void)
{
	char *final = tu_mkdtemp("libovni_final");
	char *tmp = tu_mkdtemp("libovni_tmp");
	REQUIRE(final && tmp);

	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		tmpdir_child(final, tmp);
	int status;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	weft_trace *t = weft_open_checked(final);
	CHECK_EQ_U64(weft_trace_stream_count(t), 1);
	if (weft_trace_stream_count(t) == 1) {
		CHECK_EQ_I64(weft_trace_stream(t, 0)->finished, 1);
		CHECK_EQ_U64(weft_trace_stream(t, 0)->file_size, 8 + 12);
	}
	weft_trace_free(t);
	if (tu_failures == 0) {
		tu_rmtree(final);
		tu_rmtree(tmp);
	}
	free(final);
	free(tmp);
}

/* The OVNI_TMPDIR case first (it forks), then the main streams. */
int
main(void)
{
	char *dir = fresh_tracedir("libovni_meta");

	test_tmpdir(); /* first: forks before this process initializes */
	test_streams(dir);
	return tu_finish_dir(dir);
}
