/* SPDX-License-Identifier: MIT */
/*
 * emu/pcf.h - the event types and value labels of an emulated .pcf
 * (pcf.c): declared in order, rendered in ovniemu's layout.
 */
#ifndef WEFT_EMU_PCF_H
#define WEFT_EMU_PCF_H

#include <stddef.h>
#include <stdint.h>

#include "emu/engine.h"

typedef struct weft__emu_pcf_value {
	int64_t value;
	char *text;
} weft__emu_pcf_value;

struct weft__emu_pcf_type {
	uint32_t type;
	char *name;
	weft__emu_pcf_value *values;
	size_t nvalues, cap;
};

struct weft__emu_pcf {
	weft__emu_pcf_type *types;
	size_t ntypes, cap;
};

/* Declares a type (kept with its first name when declared again); NULL: no memory. */
weft__emu_pcf_type *weft__emu_pcf_type_add(weft__emu_pcf *p, uint32_t type, const char *name);
weft__emu_pcf_type *weft__emu_pcf_type_find(weft__emu_pcf *p, uint32_t type);
/* Adds a fixed list of labels (ending with a NULL text): 0 or WEFT_ENOMEM. */
int weft__emu_pcf_add_list(weft__emu_pcf_type *t, const weft__emu_label *labels);
/* The text of the .pcf (malloc'd; NULL without memory). */
char *weft__emu_pcf_render(const weft__emu_pcf *p);
void weft__emu_pcf_clear(weft__emu_pcf *p);

#endif
