/* SPDX-License-Identifier: MIT */
/*
 * emu/model_nosv_hwc.c - hardware counters of the nOS-V model (ovniemu
 * 1.14's rules, its nosv/hwc.c restated): every thread may name the
 * counters nOS-V reads in its metadata, nosv.hwc { "<index>": { "name":
 * "PAPI_TOT_INS" } }; threads that name counters must name the same
 * number, and agree on the name of an index. A VWC jumbo event carries
 * one signed 64-bit value per counter, in index order, and sets them all.
 *
 * Each counter is a channel of every thread, shown on its row while the
 * thread is active, and of every CPU, its running thread's; Paraver type
 * 200 + index, the counter's name as the .pcf type name (no suffix), a
 * value written again when it repeats (the counters count per interval),
 * 0 a valid value.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "emu/model_nosv_hwc.h"
#include "emu/pcf.h"

#define HWC_PRV_BASE 200
#define HWC_MAX 100      /* indices in [0, 100) */

struct weft__emu_hwc {
	char **names;                /* per index */
	uint32_t n;
	weft__emu_chan_spec *chans;  /* one per counter, after the model's table */
	uint32_t first_slot;
};

/* One "<index>": { "name": ... } entry of thread `tid`'s nosv.hwc. */
static int parse_counter(weft__emu *e, weft__emu_hwc *h, int64_t tid, const char *key,
			 const json_t *v)
{
	char *end;
	errno = 0;
	long index = strtol(key, &end, 10);
	if (errno != 0 || end == key || *end != '\0')
		return weft__emu_fail(e, "failed to parse hwc index: %s (thread %" PRId64 ")",
				      key, tid);
	if (index < 0 || index >= HWC_MAX)
		return weft__emu_fail(e, "hwc index should be in [0, %d) range: %ld", HWC_MAX,
				      index);
	if ((unsigned long)index >= h->n)
		return weft__emu_fail(e, "hwc index %ld exceeds allocated counters %" PRIu32,
				      index, h->n);
	const char *name = json_string_value(json_object_get(v, "name"));
	if (name == NULL)
		return weft__emu_fail(e, "hwc %ld of thread %" PRId64 " has no name", index, tid);
	if (h->names[index] == NULL) {
		size_t len = strlen(name) + 1;
		if ((h->names[index] = malloc(len)) == NULL)
			return weft__emu_fail(e, "out of memory");
		memcpy(h->names[index], name, len);
	} else if (strcmp(h->names[index], name) != 0) {
		return weft__emu_fail(e, "hwc at %ld already defined as %s", index,
				      h->names[index]);
	}
	return 0;
}

/* The counters thread `t` names, if any (an empty object names none). */
static int scan_thread(weft__emu *e, weft__emu_hwc *h, uint32_t t)
{
	const weft_node *node = weft_trace_node(e->trace, e->sys->threads[t].node);
	int64_t tid = e->sys->threads[t].tid;
	json_t *root = json_loads(node->metadata_json, 0, NULL);
	const json_t *obj = json_object_get(json_object_get(root, "nosv"), "hwc");
	size_t n = json_is_object(obj) ? json_object_size(obj) : 0;
	int rc = 0;
	if (n > 0 && h->n == 0) {
		if (n > HWC_MAX || (h->names = calloc(n, sizeof *h->names)) == NULL)
			rc = n > HWC_MAX ? weft__emu_fail(e, "thread %" PRId64 " defines %zu hardware "
							 "counters, more than %d", tid, n, HWC_MAX)
					 : weft__emu_fail(e, "out of memory");
		else
			h->n = (uint32_t)n;
	} else if (n > 0 && n != h->n) {
		rc = weft__emu_fail(e, "thread %" PRId64 " defines %zu hardware counters, but emu "
				    "already has %" PRIu32, tid, n, h->n);
	}
	const char *key;
	const json_t *v;
	if (n > 0)
		json_object_foreach((json_t *)obj, key, v)
			if (rc == 0)
				rc = parse_counter(e, h, tid, key, v);
	json_decref(root);
	return rc;
}

int weft__emu_hwc_create(weft__emu *e, weft__emu_hwc **out)
{
	weft__emu_hwc *h = calloc(1, sizeof *h);
	*out = h;
	if (h == NULL)
		return weft__emu_fail(e, "out of memory");
	for (uint32_t t = 0; t < e->sys->nthreads; t++)
		if (scan_thread(e, h, t) < 0)
			return -1;
	if (h->n == 0)
		return 0;
	if ((h->chans = calloc(h->n, sizeof *h->chans)) == NULL)
		return weft__emu_fail(e, "out of memory");
	for (uint32_t i = 0; i < h->n; i++)
		h->chans[i] = (weft__emu_chan_spec){
			.name = h->names[i], .type = HWC_PRV_BASE + i, .prefix = h->names[i],
			.dup = 1, .track = WEFT__TRACK_ACT,
			.prv_flags = WEFT__PRV_SKIPDUPNULL | WEFT__PRV_ZERO };
	h->first_slot = weft__emu_add_chans(e, &weft__emu_model_nosv, h->chans, h->n);
	return 0;
}

int weft__emu_hwc_event(weft__emu *e, weft__emu_hwc *h, const weft__emu_ev *ev)
{
	if (h->n == 0)
		return weft__emu_fail(e, "got hwc event %c%c%c but no counters enabled", ev->m,
				      ev->c, ev->v);
	if (ev->v != 'C')
		return weft__emu_fail(e, "unknown nosv hwc event %c%c%c", ev->m, ev->c, ev->v);
	if (!ev->jumbo)
		return weft__emu_fail(e, "expecting a jumbo event");
	if (ev->payload_size != (uint64_t)h->n * 8)
		return weft__emu_fail(e, "unexpected hwc event with jumbo payload size %" PRIu32
				      " (expecting %" PRIu32 ")", ev->payload_size, h->n * 8);
	weft__emu_chan *raw = &e->th[ev->thread].raw[h->first_slot];
	for (uint32_t i = 0; i < h->n; i++)
		if (weft__emu_set(e, &raw[i], weft__emu_int(weft__emu_ev_i64(ev, i * 8))) < 0)
			return -1;
	return 0;
}

int weft__emu_hwc_pcf(const weft__emu_hwc *h, weft__emu_pcf *pcf)
{
	for (uint32_t i = 0; h != NULL && i < h->n; i++)
		if (weft__emu_pcf_type_add(pcf, h->chans[i].type, h->names[i]) == NULL)
			return WEFT_ENOMEM;
	return 0;
}

/*
 * The Paraver view of one counter (a window of the thread or CPU rows
 * showing the values of its type), as ovniemu 1.14 makes it: the title
 * three times (banner, name, type label), the type once.
 */
static const char view_text[] =
	"#ParaverCFG\n"
	"ConfigFile.Version: 3.4\n"
	"ConfigFile.NumWindows: 1\n"
	"\n"
	"\n"
	"################################################################################\n"
	"< NEW DISPLAYING WINDOW %s >\n"
	"################################################################################\n"
	"window_name %s\n"
	"window_type single\n"
	"window_id 1\n"
	"window_position_x 100\n"
	"window_position_y 100\n"
	"window_width 600\n"
	"window_height 150\n"
	"window_comm_lines_enabled true\n"
	"window_flags_enabled false\n"
	"window_noncolor_mode true\n"
	"window_color_mode window_in_null_gradient_mode\n"
	"window_logical_filtered true\n"
	"window_physical_filtered false\n"
	"window_comm_fromto true\n"
	"window_comm_tagsize true\n"
	"window_comm_typeval true\n"
	"window_units Microseconds\n"
	"window_maximum_y 1000.0\n"
	"window_minimum_y 1.0\n"
	"window_compute_y_max true\n"
	"window_level thread\n"
	"window_scale_relative 1.000000000000\n"
	"window_end_time_relative 1.000000000000\n"
	"window_object appl { 1, { All } }\n"
	"window_begin_time_relative 0.000000000000\n"
	"window_open true\n"
	"window_drawmode draw_randnotzero\n"
	"window_drawmode_rows draw_randnotzero\n"
	"window_pixel_size 1\n"
	"window_labels_to_draw 1\n"
	"window_selected_functions { 14, { {cpu, Active Thd}, {appl, Adding}, {task, Adding}, {thread, Next Evt Val}, {node, Adding}, {system, Adding}, {workload, Adding}, {from_obj, All}, {to_obj, All}, {tag_msg, All}, {size_msg, All}, {bw_msg, All}, {evt_type, =}, {evt_value, All} } }\n"
	"window_compose_functions { 9, { {compose_cpu, As Is}, {compose_appl, As Is}, {compose_task, As Is}, {compose_thread, As Is}, {compose_node, As Is}, {compose_system, As Is}, {compose_workload, As Is}, {topcompose1, As Is}, {topcompose2, As Is} } }\n"
	"window_filter_module evt_type 1 %u\n"
	"window_filter_module evt_type_label 1 \"%s\"\n";

/* `name` with anything but [A-Za-z0-9_.+-] as '_', for a file name. */
static void file_safe(const char *name, char *out, size_t size)
{
	size_t i = 0;
	for (; name[i] != '\0' && i + 1 < size; i++) {
		char c = name[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			 c == '_' || c == '.' || c == '+' || c == '-';
		out[i] = ok && !(i == 0 && c == '.') ? c : '_';
	}
	out[i] = '\0';
}

int weft__emu_hwc_views(const weft__emu_hwc *h, weft__emu_view_fn fn, void *arg)
{
	static const char *const dirs[2] = { "thread", "cpu" };
	static const char *const titles[2] = { "Thread: nOS-V %s of the ACTIVE thread",
					       "CPU: nOS-V %s of the RUNNING thread" };
	int rc = 0;
	for (uint32_t i = 0; h != NULL && rc == 0 && i < h->n; i++)
		for (int v = 0; rc == 0 && v < 2; v++) {
			char safe[128], path[192];
			file_safe(h->names[i], safe, sizeof safe);
			snprintf(path, sizeof path, "%s/nosv/hwc-%s.cfg", dirs[v], safe);
			int tlen = snprintf(NULL, 0, titles[v], h->names[i]);
			char *title = malloc((size_t)tlen + 1);
			char *text = NULL;
			if (title != NULL) {
				snprintf(title, (size_t)tlen + 1, titles[v], h->names[i]);
				int n = snprintf(NULL, 0, view_text, title, title, (unsigned)h->chans[i].type,
						 title);
				if ((text = malloc((size_t)n + 1)) != NULL)
					snprintf(text, (size_t)n + 1, view_text, title, title,
						 (unsigned)h->chans[i].type, title);
			}
			rc = text == NULL ? WEFT_ENOMEM : fn(arg, path, text);
			free(title);
			free(text);
		}
	return rc;
}

void weft__emu_hwc_free(weft__emu_hwc *h)
{
	if (h == NULL)
		return;
	for (uint32_t i = 0; h->names != NULL && i < h->n; i++)
		free(h->names[i]);
	free(h->names);
	free(h->chans);
	free(h);
}
