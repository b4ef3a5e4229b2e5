/* SPDX-License-Identifier: MIT */
/*
 * python/src/module.c - the module weft._weft: its exceptions, the
 * mapping of the library's status codes onto them, the code table of the
 * event batches, and the module's functions. The Python package weft
 * (python/weft/__init__.py) is the layer users import.
 */
#include "weftpy.h"
#include "writers.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL weftpy_ARRAY_API
#include <numpy/arrayobject.h>

#include <stdlib.h>
#include <string.h>

PyObject *wpy_Error, *wpy_FormatError, *wpy_IOError, *wpy_NotFoundError, *wpy_ArgumentError;

/* ---- Exceptions --------------------------------------------------------------- */

/* The exception class of a status code. */
static PyObject *error_class(int status)
{
	switch (status) {
	case WEFT_EFORMAT: case WEFT_ETRUNCATED: case WEFT_EUNSUPPORTED: case WEFT_EBYTEORDER:
		return wpy_FormatError;
	case WEFT_EIO:
		return wpy_IOError;
	case WEFT_ENOTFOUND:
		return wpy_NotFoundError;
	case WEFT_EINVAL:
		return wpy_ArgumentError;
	default:
		return wpy_Error;
	}
}

/* Sets attribute `name` of `obj` and drops the value's reference. */
static int set_attr(PyObject *obj, const char *name, PyObject *value)
{
	if (value == NULL)
		return -1;
	int rc = PyObject_SetAttrString(obj, name, value);
	Py_DECREF(value);
	return rc;
}

/*
 * Raises the exception of `status` with the library's last error: the
 * message as its argument, and attributes file (None when the message
 * names none), offset (None when none), message (the text after the
 * location: the library keeps the parts apart, weft_last_error_file()),
 * status (the code's short description) and code.
 */
PyObject *wpy_raise(int status)
{
	if (status == WEFT_ENOMEM)
		return PyErr_NoMemory();
	return wpy_raise_error(status, weft_last_error(), weft_last_error_file(),
			       weft_last_error_offset(), weft_last_error_text());
}

PyObject *wpy_raise_error(int status, const char *msg, const char *file, uint64_t offset,
			  const char *text)
{
	if (status == WEFT_ENOMEM)
		return PyErr_NoMemory();
	if (msg == NULL || *msg == '\0') {
		msg = text = weft_strerror(status);
		file = NULL;
		offset = WEFT_NO_OFFSET;
	} else if (text == NULL) {
		text = msg;
	}
	PyObject *exc = PyObject_CallFunction(error_class(status), "s", msg);
	if (exc == NULL)
		return NULL;
	if (set_attr(exc, "file", file != NULL ? PyUnicode_DecodeFSDefault(file)
					       : Py_NewRef(Py_None)) < 0 ||
	    set_attr(exc, "offset", offset != WEFT_NO_OFFSET ? PyLong_FromUnsignedLongLong(offset)
							     : Py_NewRef(Py_None)) < 0 ||
	    set_attr(exc, "message", PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "replace")) < 0 ||
	    set_attr(exc, "status", PyUnicode_FromString(weft_strerror(status))) < 0 ||
	    set_attr(exc, "code", PyLong_FromLong(status)) < 0) {
		Py_DECREF(exc);
		return NULL;
	}
	PyErr_SetObject(error_class(status), exc);
	Py_DECREF(exc);
	return NULL;
}

/* ---- The code table ---------------------------------------------------------- */

/*
 * The bytes of a code of at most 8 bytes as one integer (little-endian
 * order of the bytes), and the hash of a code: short codes (ovni's are 3
 * bytes) are hashed from that integer, longer ones byte by byte.
 */
static inline uint64_t code_key(const char *s, uint32_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	if (len == 3)
		return u[0] | (uint64_t)u[1] << 8 | (uint64_t)u[2] << 16;
	uint64_t k = 0;
	for (uint32_t i = 0; i < len; i++)
		k |= (uint64_t)(unsigned char)s[i] << (8 * i);
	return k;
}

static inline uint64_t code_hash(const char *s, uint32_t len)
{
	if (len <= 8)
		return ((code_key(s, len) ^ ((uint64_t)len << 59)) * 0x9E3779B97F4A7C15ull);
	uint64_t h = 1469598103934665603ull;
	for (uint32_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

/* Doubles the slot table (and builds it the first time): -1 without memory. */
static int codes_rehash(wpy_codes *t)
{
	uint32_t size = t->slots == NULL ? 64 : (t->mask + 1) * 2;
	uint32_t *slots = calloc(size, sizeof *slots);
	if (slots == NULL)
		return -1;
	for (uint32_t i = 0; i < t->count; i++) {
		uint32_t s = (uint32_t)(t->codes[i].hash >> 32) & (size - 1);
		while (slots[s] != 0)
			s = (s + 1) & (size - 1);
		slots[s] = i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->mask = size - 1;
	return 0;
}

int wpy_grow(void **array, size_t *cap, size_t need, size_t size, size_t first)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : first;
	while (n < need)
		n *= 2;
	void *p = realloc(*array, n * size);
	if (p == NULL)
		return -1;
	*array = p;
	*cap = n;
	return 0;
}

/* Adds a new code at slot s: its index, or -1 without memory. */
static int64_t codes_add(wpy_codes *t, const char *code, uint32_t len, uint64_t h)
{
	size_t cap = t->cap;
	if (wpy_grow((void **)&t->codes, &cap, (size_t)t->count + 1, sizeof *t->codes, 32) < 0)
		return -1;
	t->cap = (uint32_t)cap;
	char *bytes = malloc(len + 1u);
	if (bytes == NULL)
		return -1;
	memcpy(bytes, code, len);
	bytes[len] = '\0';
	t->codes[t->count] = (wpy_code){bytes, len, h};
	t->count++;
	/* Keep the table at most half full. */
	if ((uint64_t)t->count * 2 > (uint64_t)t->mask + 1) {
		if (codes_rehash(t) < 0) {
			t->count--;
			free(bytes);
			return -1;
		}
		return t->count - 1;
	}
	uint32_t s = (uint32_t)(h >> 32) & t->mask;
	while (t->slots[s] != 0)
		s = (s + 1) & t->mask;
	t->slots[s] = t->count;
	return t->count - 1;
}

/*
 * The index of a code in the table, added when met for the first time.
 * Short codes compare as one integer (the hash of a short code is a
 * bijection of its key and length, so equal hashes and lengths are equal
 * codes).
 */
static int64_t codes_find(wpy_codes *t, const char *code, uint32_t len)
{
	if (t->slots == NULL && codes_rehash(t) < 0)
		return -1;
	uint64_t h = code_hash(code, len);
	for (uint32_t s = (uint32_t)(h >> 32) & t->mask; t->slots[s] != 0; s = (s + 1) & t->mask) {
		const wpy_code *c = &t->codes[t->slots[s] - 1];
		if (c->hash == h && c->len == len && (len <= 8 || memcmp(c->bytes, code, len) == 0))
			return t->slots[s] - 1;
	}
	return codes_add(t, code, len, h);
}

/*
 * The index of a code (no GIL needed). Codes of up to 7 bytes go through
 * a direct-mapped cache keyed by their bytes and length in one integer:
 * one compare per event on the hot path of a batch.
 */
int64_t wpy_codes_index(wpy_codes *t, const char *code, uint32_t len)
{
	if (len > 7)
		return codes_find(t, code, len);
	uint64_t k = wpy_code_key(code, len);
	uint32_t s = wpy_code_slot(k);
	if (t->fast_key != NULL && t->fast_key[s] == k)
		return t->fast_index[s];
	if (t->fast_key == NULL) {
		t->fast_key = malloc(sizeof(uint64_t) << WPY_FAST_BITS);
		t->fast_index = malloc(sizeof(uint32_t) << WPY_FAST_BITS);
		if (t->fast_key == NULL || t->fast_index == NULL)
			return -1;
		/* No key has every bit set: its length byte is at most 7. */
		memset(t->fast_key, 0xff, sizeof(uint64_t) << WPY_FAST_BITS);
	}
	int64_t i = codes_find(t, code, len);
	if (i >= 0) {
		t->fast_key[s] = k;
		t->fast_index[s] = (uint32_t)i;
	}
	return i;
}

void wpy_codes_free(wpy_codes *t)
{
	for (uint32_t i = 0; i < t->count; i++)
		free(t->codes[i].bytes);
	free(t->codes);
	free(t->slots);
	free(t->fast_key);
	free(t->fast_index);
	memset(t, 0, sizeof *t);
}

/* ---- Module functions ------------------------------------------------------- */

PyDoc_STRVAR(version_doc, "version() -> str\n\nThe version of the libweft the module runs with.");

static PyObject *py_version(PyObject *mod, PyObject *unused)
{
	return PyUnicode_FromString(weft_version());
}

PyDoc_STRVAR(formats_doc, "formats() -> list of str\n\n"
	     "The formats weft reads, in the order they are detected (\"ovni\", ...).");

/* The name of format i. */
static PyObject *format_name(const void *unused, size_t i)
{
	return PyUnicode_FromString(weft_format_name(weft_format_at(i)));
}

static PyObject *py_formats(PyObject *mod, PyObject *unused)
{
	return wpy_list_of(NULL, 0, weft_format_count(), format_name);
}

PyDoc_STRVAR(format_options_doc, "format_options(format=None) -> list of dict\n\n"
	     "The format options weft.open() takes (of one format, or of every format\n"
	     "when None): key (\"ross.kind\"), type, what and help.");

/* Option i of a format (ctx: the format) as a dict. */
static PyObject *option_dict(const void *format, size_t i)
{
	const weft_format_option *o = weft_format_option_get((weft_format)(intptr_t)format, i);
	return Py_BuildValue("{s:s,s:s,s:s,s:s}", "key", o->key, "type", o->type, "what", o->what,
			     "help", o->help);
}

/* Text i of an array of texts (ctx), as a str. */
static PyObject *text_item(const void *texts, size_t i)
{
	const char *s = ((const char *const *)texts)[i];
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

PyObject *wpy_str_list(const char *const *texts, size_t count)
{
	return wpy_list_of(texts, 0, count, text_item);
}

static PyObject *py_format_options(PyObject *mod, PyObject *args)
{
	const char *name = NULL;
	if (!PyArg_ParseTuple(args, "|z", &name))
		return NULL;
	int format = name != NULL ? weft_format_from_name(name) : WEFT_FORMAT_AUTO;
	if (format < 0)
		return PyErr_Format(PyExc_ValueError, "unknown format %s", name);
	return wpy_list_of((const void *)(intptr_t)format, 0,
			   weft_format_option_count((weft_format)format), option_dict);
}

static PyMethodDef module_methods[] = {
	{"version", py_version, METH_NOARGS, version_doc},
	{"formats", py_formats, METH_NOARGS, formats_doc},
	{"format_options", py_format_options, METH_VARARGS, format_options_doc},
	{NULL, NULL, 0, NULL}
};

PyDoc_STRVAR(module_doc, "The C part of the weft package: import weft, not weft._weft.");

static struct PyModuleDef weft_module = {
	PyModuleDef_HEAD_INIT, "weft._weft", module_doc, -1, module_methods,
	NULL, NULL, NULL, NULL
};

/* Creates an exception class `weft.<name>` with `bases`, added to the module. */
static PyObject *add_error(PyObject *mod, const char *name, const char *doc, PyObject *bases)
{
	char qualified[64];
	snprintf(qualified, sizeof qualified, "weft.%s", name);
	PyObject *cls = PyErr_NewExceptionWithDoc(qualified, doc, bases, NULL);
	Py_XDECREF(bases);
	if (cls == NULL || PyModule_AddObjectRef(mod, name, cls) < 0) {
		Py_XDECREF(cls);
		return NULL;
	}
	return cls;
}

/* Creates the exceptions: weft.Error and one subclass per kind of failure. */
static int add_errors(PyObject *mod)
{
	wpy_Error = add_error(mod, "Error",
		"Base class of weft's errors. Attributes: file (the file, or None),\n"
		"offset (the byte offset in it, or None), message (what was expected and\n"
		"found), status (the library's short description) and code (its WEFT_E* code).",
		Py_NewRef(PyExc_Exception));
	if (wpy_Error == NULL)
		return -1;
	wpy_FormatError = add_error(mod, "FormatError",
		"The input is not what its format says it must be (malformed, truncated,\n"
		"the other byte order, or valid but not supported).",
		Py_NewRef(wpy_Error));
	wpy_IOError = add_error(mod, "IOError",
		"A system call failed while reading (also an OSError).",
		PyTuple_Pack(2, wpy_Error, PyExc_OSError));
	wpy_NotFoundError = add_error(mod, "NotFoundError",
		"No such file, stream or format (also a FileNotFoundError).",
		PyTuple_Pack(2, wpy_Error, PyExc_FileNotFoundError));
	wpy_ArgumentError = add_error(mod, "ArgumentError",
		"A bad argument, such as an unknown format option or a value it does\n"
		"not take (also a ValueError).",
		PyTuple_Pack(2, wpy_Error, PyExc_ValueError));
	return wpy_FormatError && wpy_IOError && wpy_NotFoundError && wpy_ArgumentError ? 0 : -1;
}

PyMODINIT_FUNC PyInit__weft(void)
{
	import_array();
	PyObject *mod = PyModule_Create(&weft_module);
	if (mod == NULL)
		return NULL;
	if (add_errors(mod) < 0 || PyType_Ready(&wpy_TraceType) < 0 ||
	    PyType_Ready(&wpy_EventsType) < 0 || wpy_progress_init_type(mod) < 0 ||
	    wpy_extras_register(mod) < 0 ||
	    PyModule_AddObjectRef(mod, "Trace", (PyObject *)&wpy_TraceType) < 0 ||
	    wpy_writers_add(mod) < 0) {
		Py_DECREF(mod);
		return NULL;
	}
	return mod;
}
