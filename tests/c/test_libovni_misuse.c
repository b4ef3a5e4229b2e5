/* SPDX-License-Identifier: MIT */
/*
 * test_libovni_misuse - misuse of the API aborts, like libovni, with a
 * message on stderr that names the function; I/O failures abort with the
 * errno text; ovni_version_check accepts 1.x up to 1.14. Each case runs
 * in a child process whose stderr is captured.
 */
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "test_libovni_common.h"

/* Brings a child to the point where it can emit. */
static void
ready(void)
{
	ovni_proc_init(1, "testhost.misuse", getpid());
	ovni_thread_init(test_gettid());
}

/* Emits a 12-byte event. */
static void
emit_empty(void)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_mcv(&ev, "OB.");
	ovni_ev_emit(&ev);
}

static void c_emit_uninit(void) { emit_empty(); }
static void c_thread_before_proc(void) { ovni_thread_init(test_gettid()); }
static void c_proc_twice(void) { ready(); ovni_proc_init(1, "x", 1); }
static void c_free_twice(void) { ready(); ovni_thread_free(); ovni_thread_free(); }
static void c_flush_uninit(void) { ovni_flush(); }

/* libovni needs the calling thread's stream to hold the rank. */
static void
c_rank_before_thread(void)
{
	ovni_proc_init(1, "testhost.misuse", getpid());
	ovni_proc_set_rank(0, 1);
}

/* A 1-byte payload cannot be encoded. */
static void
c_payload_one(void)
{
	struct ovni_ev ev = { 0 };
	uint8_t b[16] = { 0 };
	ovni_payload_add(&ev, b, 1);
}

/* More than 16 payload bytes. */
static void
c_payload_overflow(void)
{
	struct ovni_ev ev = { 0 };
	uint8_t b[16] = { 0 };
	ovni_payload_add(&ev, b, 16);
	ovni_payload_add(&ev, b, 2);
}

/* A jumbo event must start without payload. */
static void
c_jumbo_with_payload(void)
{
	struct ovni_ev ev = { 0 };
	uint8_t b[4] = { 0 };
	ready();
	ovni_payload_add(&ev, b, 4);
	ovni_ev_jumbo_emit(&ev, b, 4);
}

/* ovni_ev_emit() cannot write a jumbo event. */
static void
c_emit_jumbo_flag(void)
{
	struct ovni_ev ev = { 0 };
	ready();
	ev.header.flags = OVNI_EV_JUMBO | 3;
	ovni_ev_emit(&ev);
}

static void c_version_major(void) { ovni_version_check_str("2.0.0"); }
static void c_version_minor(void) { ovni_version_check_str("1.15.0"); }
static void c_version_garbage(void) { ovni_version_check_str("one.two"); }
static void c_mark_zero(void) { ready(); ovni_mark_push(1, 0); }
static void c_mark_type_range(void) { ready(); ovni_mark_type(100, 0, "x"); }
static void c_mark_type_twice(void) { ready(); ovni_mark_type(1, 0, "a");
				       ovni_mark_type(1, 0, "b"); }
static void c_mark_label_undefined(void) { ready(); ovni_mark_label(5, 1, "x"); }
static void c_attr_missing(void) { ready(); ovni_attr_get_double("no.such.key"); }
static void c_attr_wrong_type(void) { ready(); ovni_attr_set_str("k", "v");
				       ovni_attr_get_boolean("k"); }
static void c_attr_bad_json(void) { ready(); ovni_attr_set_json("k", "{nope"); }
static void c_attr_uninit(void) { ovni_attr_set_double("k", 1); }
static void c_require_bad(void) { ready(); ovni_thread_require("no.dots", "1.0.0"); }
static void c_require_version(void) { ready(); ovni_thread_require("nosv", "2.x"); }
static void c_add_cpu_uninit(void) { ovni_proc_init(1, "h.x", getpid()); ovni_add_cpu(0, 0); }

/* The trace directory cannot be created: the errno text is printed. */
static void
c_io_failure(void)
{
	setenv("OVNI_TRACEDIR", "/dev/null/trace", 1);
	ovni_proc_init(1, "testhost.io", getpid());
}

/* Accepted versions: the child exits normally. */
static void
c_versions_ok(void)
{
	ovni_version_check();
	ovni_version_check_str("1.0.0");
	ovni_version_check_str("1.14.0");
	ovni_version_check_str("1.14.99");
	ovni_version_check_str("1.2.3-rc1");
}

typedef struct death_case {
	const char *name;
	void (*fn)(void);
	const char *want; /* text the message must contain; NULL: must not die */
} death_case;

static const death_case cases[] = {
	{ "emit before init", c_emit_uninit, "ovni_ev_emit" },
	{ "thread before proc", c_thread_before_proc, "ovni_thread_init" },
	{ "proc twice", c_proc_twice, "ovni_proc_init" },
	{ "free twice", c_free_twice, "ovni_thread_free" },
	{ "flush before init", c_flush_uninit, "ovni_flush" },
	{ "rank before thread init", c_rank_before_thread,
	  "ovni_proc_set_rank: thread not yet initialized" },
	{ "1-byte payload", c_payload_one, "ovni_payload_add" },
	{ "payload overflow", c_payload_overflow, "ovni_payload_add" },
	{ "jumbo with payload", c_jumbo_with_payload, "ovni_ev_jumbo_emit" },
	{ "emit a jumbo-flagged event", c_emit_jumbo_flag, "ovni_ev_emit" },
	{ "major version", c_version_major, "ovni_version_check" },
	{ "newer minor version", c_version_minor, "ovni_version_check" },
	{ "garbage version", c_version_garbage, "ovni_version_check" },
	{ "mark value 0", c_mark_zero, "ovni_mark_push" },
	{ "mark type 100", c_mark_type_range, "ovni_mark_type" },
	{ "mark type twice", c_mark_type_twice, "ovni_mark_type" },
	{ "label of undefined type", c_mark_label_undefined, "ovni_mark_label" },
	{ "missing attribute", c_attr_missing, "ovni_attr_get_double" },
	{ "attribute of another type", c_attr_wrong_type, "ovni_attr_get_boolean" },
	{ "bad JSON attribute", c_attr_bad_json, "ovni_attr_set_json" },
	{ "attribute before init", c_attr_uninit, "ovni_attr_set_double" },
	{ "bad model name", c_require_bad, "ovni_thread_require" },
	{ "bad model version", c_require_version, "ovni_thread_require" },
	{ "add_cpu before thread init", c_add_cpu_uninit, "ovni_add_cpu" },
	{ "unwritable trace dir", c_io_failure, "Not a directory" },
	{ "accepted versions", c_versions_ok, NULL },
};

/* Runs one case in a child; checks how it ended and what it printed. */
static void
run_case(const death_case *c, const char *dir)
{
	int p[2];
	REQUIRE(pipe(p) == 0);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core);
		dup2(p[1], 2);
		close(p[0]);
		setenv("OVNI_TRACEDIR", dir, 1);
		c->fn();
		_exit(0);
	}
	close(p[1]);
	char out[4096];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(out) - 1 && (r = read(p[0], out + n, sizeof(out) - 1 - n)) > 0)
		n += (size_t) r;
	out[n] = '\0';
	close(p[0]);
	int status;
	waitpid(pid, &status, 0);

	if (c->want == NULL) {
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			tu_fail(__FILE__, __LINE__, "%s: the child died: %s", c->name, out);
		return;
	}
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
		tu_fail(__FILE__, __LINE__, "%s: the child did not abort", c->name);
	if (strstr(out, c->want) == NULL || strstr(out, "ovni") == NULL)
		tu_fail(__FILE__, __LINE__, "%s: message \"%s\" does not name %s", c->name, out,
			c->want);
}

/* Every case in its own child process. */
int
main(void)
{
	char *dir = tu_mkdtemp("libovni_misuse");
	REQUIRE(dir != NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i], dir);
	tu_rmtree(dir);
	free(dir);
	return tu_result();
}
