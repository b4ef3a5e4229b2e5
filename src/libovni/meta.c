/* SPDX-License-Identifier: MIT */
/*
 * meta.c - the stream.json of each thread: its initial content, required
 * models, user attributes under dot-separated keys, and mark types and
 * labels (which live under "ovni.mark", as in libovni 1.14).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libovni_priv.h"

/* Longest attribute key accepted (libovni uses small fixed buffers too). */
#define OV_KEY_MAX 1024

/* ---- Storing ------------------------------------------------------------- */

/* Aborts when jansson could not build a value (out of memory, bad UTF-8). */
static json_t *
ov_json_check(json_t *v, const char *func, const char *what)
{
	if (v == NULL)
		ov_die(func, "cannot store %s (not valid UTF-8, not finite, or out of memory)", what);
	return v;
}

/* {"version": 3, "ovni": {lib, part, tid, pid, loom, app_id, require}},
 * in the key order libovni 1.14 writes them. */
json_t *
ov_meta_new(const struct ov_thread *t)
{
	json_t *meta = json_pack("{s:i, s:{s:{s:s, s:s}, s:s, s:i, s:i, s:s, s:i, s:{s:s}}}",
				 "version", OVNI_METADATA_VERSION,
				 "ovni",
				 "lib", "version", OVNI_LIB_VERSION, "commit", OVNI_GIT_COMMIT,
				 "part", "thread",
				 "tid", (int) t->tid,
				 "pid", ov_proc.pid,
				 "loom", ov_proc.loom,
				 "app_id", ov_proc.app,
				 "require", "ovni", OVNI_MODEL_VERSION);
	return ov_json_check(meta, "ovni_thread_init", "the stream metadata");
}

/* The "ovni" object (recreated if a user attribute replaced it). */
json_t *
ov_meta_ovni(struct ov_thread *t)
{
	json_t *o = json_object_get(t->meta, "ovni");
	if (!json_is_object(o)) {
		o = ov_json_check(json_object(), "ovni", "the ovni metadata");
		json_object_set_new(t->meta, "ovni", o);
	}
	return o;
}

/* What is only known when the stream is closed: rank and nranks set by
 * this thread, the CPUs added by this thread, and finished: 1 when the
 * user closed the stream with ovni_thread_free(). */
void
ov_meta_finalize(struct ov_thread *t, int finished)
{
	json_t *o = ov_meta_ovni(t);

	if (t->rank_set) {
		json_object_set_new(o, "rank", json_integer(t->rank));
		json_object_set_new(o, "nranks", json_integer(t->nranks));
	}
	if (t->cpus != NULL)
		json_object_set(o, "loom_cpus", t->cpus);
	if (finished)
		json_object_set_new(o, "finished", json_integer(1));
}

/* Writes stream.json through a temporary file and rename(), so readers
 * (and a crash) only ever see a complete file. */
void
ov_meta_store(struct ov_thread *t)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	char *text = json_dumps(t->meta, JSON_INDENT(4));

	if (text == NULL)
		ov_die("ovni", "cannot serialise the metadata of thread %d", (int) t->tid);
	if (snprintf(path, sizeof(path), "%s/stream.json", t->dir) >= (int) sizeof(path)
	    || snprintf(tmp, sizeof(tmp), "%s/.stream.json.tmp", t->dir) >= (int) sizeof(tmp))
		ov_die("ovni", "path too long: %s/stream.json", t->dir);

	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		ov_die("ovni", "cannot create %s:", tmp);
	ov_write_all(fd, text, strlen(text), tmp);
	ov_write_all(fd, "\n", 1, tmp);
	if (close(fd) != 0)
		ov_die("ovni", "cannot write %s:", tmp);
	if (rename(tmp, path) != 0)
		ov_die("ovni", "cannot rename %s to %s:", tmp, path);
	free(text);
}

/* ---- Dot-separated keys -------------------------------------------------- */

/*
 * Finds the object that holds the last component of key "a.b.c" (and
 * copies that component into last). With create, missing objects on the
 * way are created; a non-object in the way aborts. Without create,
 * returns NULL when the path does not exist.
 */
static json_t *
ov_dot_parent(json_t *root, const char *key, int create, char *last,
	      const char *func)
{
	if (key == NULL || key[0] == '\0' || strlen(key) >= OV_KEY_MAX)
		ov_die(func, "bad key \"%s\"", key ? key : "(null)");

	json_t *obj = root;
	const char *p = key;
	for (;;) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t) (dot - p) : strlen(p);
		if (n == 0)
			ov_die(func, "bad key \"%s\" (empty component)", key);
		memcpy(last, p, n);
		last[n] = '\0';
		if (dot == NULL)
			return obj;
		json_t *next = json_object_get(obj, last);
		if (next == NULL && create) {
			next = ov_json_check(json_object(), func, key);
			json_object_set_new(obj, last, next);
		}
		if (!json_is_object(next)) {
			if (create)
				ov_die(func, "cannot set \"%s\": \"%s\" is not an object", key, last);
			return NULL;
		}
		obj = next;
		p = dot + 1;
	}
}

/* Value at key, or NULL. */
static json_t *
ov_dot_get(json_t *root, const char *key, const char *func)
{
	char last[OV_KEY_MAX];
	json_t *parent = ov_dot_parent(root, key, 0, last, func);
	return parent ? json_object_get(parent, last) : NULL;
}

/* Stores v (reference stolen) at key, creating objects on the way. */
static void
ov_dot_set(json_t *root, const char *key, json_t *v, const char *func)
{
	char last[OV_KEY_MAX];
	json_t *parent = ov_dot_parent(root, key, 1, last, func);
	if (json_object_set_new(parent, last, v) != 0)
		ov_die(func, "cannot set \"%s\"", key);
}

/* Value at key of this thread's metadata; aborts when missing. */
static json_t *
ov_attr_require(const char *key, const char *func)
{
	struct ov_thread *t = ov_thread_get(func);
	json_t *v = ov_dot_get(t->meta, key, func);
	if (v == NULL)
		ov_die(func, "key not found: %s", key);
	return v;
}

/* ---- Models ---------------------------------------------------------------- */

/* Declares that the stream uses a model (e.g. "nosv", "2.7.0"); the
 * checks on the names are libovni's. */
void
ovni_thread_require(const char *model, const char *version)
{
	struct ov_thread *t = ov_thread_get("ovni_thread_require");
	int v[3];
	char key[OV_KEY_MAX];

	if (model == NULL)
		ov_die("ovni_thread_require", "the model name is NULL");
	if (strpbrk(model, " .") != NULL || strlen(model) <= 1)
		ov_die("ovni_thread_require", "malformed model name \"%s\"", model);
	if (version == NULL || ov_version_parse(version, v) != 0)
		ov_die("ovni_thread_require", "cannot parse version \"%s\" of model %s",
		       version ? version : "(null)", model);
	if (snprintf(key, sizeof(key), "ovni.require.%s", model) >= (int) sizeof(key))
		ov_die("ovni_thread_require", "model name too long");
	ov_dot_set(t->meta, key, ov_json_check(json_string(version), "ovni_thread_require", key),
		   "ovni_thread_require");
}

/* ---- Attributes ------------------------------------------------------------ */

/* 1 when the key exists in this thread's metadata. */
int
ovni_attr_has(const char *key)
{
	struct ov_thread *t = ov_thread_get("ovni_attr_has");
	return ov_dot_get(t->meta, key, "ovni_attr_has") != NULL;
}

/* Stores a number; JSON has no NaN or infinity, so those abort. */
void
ovni_attr_set_double(const char *key, double num)
{
	struct ov_thread *t = ov_thread_get("ovni_attr_set_double");
	if (!isfinite(num))
		ov_die("ovni_attr_set_double", "%s: JSON cannot hold a non-finite number", key);
	ov_dot_set(t->meta, key, ov_json_check(json_real(num), "ovni_attr_set_double", key),
		   "ovni_attr_set_double");
}

/* Stores true (any non-zero value) or false. */
void
ovni_attr_set_boolean(const char *key, int value)
{
	struct ov_thread *t = ov_thread_get("ovni_attr_set_boolean");
	ov_dot_set(t->meta, key, json_boolean(value), "ovni_attr_set_boolean");
}

/* The string is copied. */
void
ovni_attr_set_str(const char *key, const char *value)
{
	struct ov_thread *t = ov_thread_get("ovni_attr_set_str");
	if (value == NULL)
		ov_die("ovni_attr_set_str", "%s: NULL value", key);
	ov_dot_set(t->meta, key, ov_json_check(json_string(value), "ovni_attr_set_str", key),
		   "ovni_attr_set_str");
}

/* Any JSON value (object, array, number...) given as text. */
void
ovni_attr_set_json(const char *key, const char *json)
{
	struct ov_thread *t = ov_thread_get("ovni_attr_set_json");
	json_error_t err;

	if (json == NULL)
		ov_die("ovni_attr_set_json", "%s: NULL JSON text", key);
	json_t *v = json_loads(json, JSON_DECODE_ANY, &err);
	if (v == NULL)
		ov_die("ovni_attr_set_json", "%s: cannot parse JSON (%s): %s", key, err.text, json);
	ov_dot_set(t->meta, key, v, "ovni_attr_set_json");
}

/* A number attribute (integer or real); aborts when missing or not a number. */
double
ovni_attr_get_double(const char *key)
{
	json_t *v = ov_attr_require(key, "ovni_attr_get_double");
	if (!json_is_number(v))
		ov_die("ovni_attr_get_double", "value of \"%s\" is not a number", key);
	return json_number_value(v);
}

/* A boolean attribute as 0/1; aborts when missing or not a boolean. */
int
ovni_attr_get_boolean(const char *key)
{
	json_t *v = ov_attr_require(key, "ovni_attr_get_boolean");
	if (!json_is_boolean(v))
		ov_die("ovni_attr_get_boolean", "value of \"%s\" is not a boolean", key);
	return json_is_true(v);
}

/* Valid until the attribute is changed or the thread is freed. */
const char *
ovni_attr_get_str(const char *key)
{
	json_t *v = ov_attr_require(key, "ovni_attr_get_str");
	if (!json_is_string(v))
		ov_die("ovni_attr_get_str", "value of \"%s\" is not a string", key);
	return json_string_value(v);
}

/* The value as compact JSON text; the caller frees it with free(). */
char *
ovni_attr_get_json(const char *key)
{
	json_t *v = ov_attr_require(key, "ovni_attr_get_json");
	char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	if (text == NULL)
		ov_die("ovni_attr_get_json", "cannot serialise \"%s\"", key);
	char *copy = strdup(text); /* plain malloc memory whatever jansson uses */
	free(text);
	if (copy == NULL)
		ov_die("ovni_attr_get_json", "out of memory:");
	return copy;
}

/* Writes stream.json now, so attributes survive a crash. */
void
ovni_attr_flush(void)
{
	ov_meta_store(ov_thread_get("ovni_attr_flush"));
}

/* ---- Marks ------------------------------------------------------------------ */

/* Types are 0..99, as in libovni (the emulator maps them to Paraver
 * event types). */
static void
ov_mark_check_type(int32_t type, const char *func)
{
	if (type < 0 || type >= 100)
		ov_die(func, "mark type %" PRId32 " not in [0, 100)", type);
}

/* Declares a mark type with its title; OVNI_MARK_STACK makes it a stack
 * (push/pop), otherwise values are set. Once per type per stream. */
void
ovni_mark_type(int32_t type, long flags, const char *title)
{
	struct ov_thread *t = ov_thread_get("ovni_mark_type");
	char key[64];

	ov_mark_check_type(type, "ovni_mark_type");
	if (title == NULL || title[0] == '\0')
		ov_die("ovni_mark_type", "empty title for type %" PRId32, type);
	snprintf(key, sizeof(key), "ovni.mark.%" PRId32, type);
	if (ov_dot_get(t->meta, key, "ovni_mark_type") != NULL)
		ov_die("ovni_mark_type", "type %" PRId32 " already defined", type);

	json_t *def = json_pack("{s:s, s:s}", "title", title,
				"chan_type", (flags & OVNI_MARK_STACK) ? "stack" : "single");
	ov_dot_set(t->meta, key, ov_json_check(def, "ovni_mark_type", title), "ovni_mark_type");
}

/* Names a value of a type (value 0 is reserved). Defining the same label
 * again is accepted; a different one for the same value is not. */
void
ovni_mark_label(int32_t type, int64_t value, const char *label)
{
	struct ov_thread *t = ov_thread_get("ovni_mark_label");
	char key[96];

	ov_mark_check_type(type, "ovni_mark_label");
	if (value <= 0)
		ov_die("ovni_mark_label", "value %" PRId64 " must be > 0", value);
	if (label == NULL || label[0] == '\0')
		ov_die("ovni_mark_label", "empty label for value %" PRId64, value);
	snprintf(key, sizeof(key), "ovni.mark.%" PRId32, type);
	if (ov_dot_get(t->meta, key, "ovni_mark_label") == NULL)
		ov_die("ovni_mark_label", "type %" PRId32 " not defined in this thread", type);

	snprintf(key, sizeof(key), "ovni.mark.%" PRId32 ".labels.%" PRId64, type, value);
	json_t *old = ov_dot_get(t->meta, key, "ovni_mark_label");
	if (old != NULL) {
		if (json_is_string(old) && strcmp(json_string_value(old), label) == 0)
			return;
		ov_die("ovni_mark_label", "value %" PRId64 " of type %" PRId32 " already has another label",
		       value, type);
	}
	ov_dot_set(t->meta, key, ov_json_check(json_string(label), "ovni_mark_label", label),
		   "ovni_mark_label");
}

/* Emits OM[ / OM] / OM= with the 12-byte payload {i64 value, i32 type}. */
static void
ov_mark_emit(char op, int32_t type, int64_t value, const char *func)
{
	struct ovni_ev ev;

	if (value == 0)
		ov_die(func, "value 0 is reserved (type %" PRId32 ")", type);
	memset(&ev, 0, sizeof(ev));
	ev.header.flags = 12 - 1;
	ev.header.model = 'O';
	ev.header.category = 'M';
	ev.header.value = (uint8_t) op;
	ev.header.clock = ov_clock();
	memcpy(&ev.payload.u8[0], &value, sizeof(value));
	memcpy(&ev.payload.u8[8], &type, sizeof(type));
	ov_emit(&ev, func);
}

/* Pushes a value on a stack mark type (OM[). */
void
ovni_mark_push(int32_t type, int64_t value)
{
	ov_mark_emit('[', type, value, "ovni_mark_push");
}

/* Pops the value on top of a stack mark type (OM]). */
void
ovni_mark_pop(int32_t type, int64_t value)
{
	ov_mark_emit(']', type, value, "ovni_mark_pop");
}

/* Sets the value of a single mark type (OM=). */
void
ovni_mark_set(int32_t type, int64_t value)
{
	ov_mark_emit('=', type, value, "ovni_mark_set");
}
