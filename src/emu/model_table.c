/* SPDX-License-Identifier: MIT */
/*
 * emu/model_table.c - rules tables for the models whose events each push,
 * pop or set one value (model_table.h).
 */
#include <inttypes.h>

#include "emu/model_table.h"

const weft__emu_rule *weft__emu_rule_find(const weft__emu_rule *rules, size_t n,
					  const weft__emu_ev *ev)
{
	for (size_t i = 0; i < n; i++)
		if (rules[i].c == ev->c && rules[i].v == ev->v)
			return &rules[i];
	return NULL;
}

int weft__emu_rule_apply(weft__emu *e, const weft__emu_model_spec *spec,
			 const weft__emu_rule *rules, size_t n, const weft__emu_ev *ev,
			 const char *what)
{
	const weft__emu_rule *r = weft__emu_rule_find(rules, n, ev);
	if (r == NULL)
		return weft__emu_fail(e, "unknown %s event", what);
	int mi = weft__emu_model_index(e, spec);
	weft__emu_chan *ch = weft__emu_th_chan(e, ev->thread, mi, r->chan);
	switch (r->action) {
	case WEFT__ACT_PUSH:
		return weft__emu_push(e, ch, r->value);
	case WEFT__ACT_POP:
		return weft__emu_pop(e, ch, r->value);
	case WEFT__ACT_SET:
		return weft__emu_set(e, ch, weft__emu_int(r->value));
	default:
		return 0;
	}
}

int weft__emu_stack_end_check(weft__emu *e, const weft__emu_model_spec *spec, uint32_t chan,
			      const char *noun)
{
	int mi = weft__emu_model_index(e, spec), rc = 0;
	for (uint32_t t = 0; t < e->sys->nthreads; t++) {
		const weft__emu_chan *ch = weft__emu_th_chan(e, t, mi, chan);
		if (ch->depth == 0)
			continue;
		weft__emu_end_error(e, t, "thread %" PRId64 " ended with %" PRIu32 " stacked %s",
				    e->th[t].info->tid, ch->depth, noun);
		rc = -1;
	}
	return rc;
}

int weft__emu_require_running(weft__emu *e, const weft__emu_ev *ev)
{
	if (e->th[ev->thread].running)
		return 0;
	return weft__emu_fail(e, "current thread %" PRId64 " not running",
			      e->th[ev->thread].info->tid);
}
