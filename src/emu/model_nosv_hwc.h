/* SPDX-License-Identifier: MIT */
/*
 * emu/model_nosv_hwc.h - the hardware counters of the nOS-V model (VWC
 * jumbo events; docs/emulation.md, section 3.4): the threads' metadata
 * names the counters (nosv.hwc: { "<index>": { "name": ... } }), each is a
 * channel of every thread (shown while the thread is active) and CPU (its
 * running thread's), Paraver type 200 + the index, named by the counter.
 */
#ifndef WEFT_EMU_MODEL_NOSV_HWC_H
#define WEFT_EMU_MODEL_NOSV_HWC_H

#include "emu/engine.h"

typedef struct weft__emu_hwc weft__emu_hwc;

/* Reads the counters of every thread and declares their channels. */
int weft__emu_hwc_create(weft__emu *e, weft__emu_hwc **out);
/* A VW event of the thread. */
int weft__emu_hwc_event(weft__emu *e, weft__emu_hwc *h, const weft__emu_ev *ev);
/* The counters' types, in a .pcf. */
int weft__emu_hwc_pcf(const weft__emu_hwc *h, weft__emu_pcf *pcf);
/* Two Paraver views per counter, thread/nosv/hwc-<name>.cfg and
 * cpu/nosv/hwc-<name>.cfg, as ovniemu makes them. */
int weft__emu_hwc_views(const weft__emu_hwc *h, weft__emu_view_fn fn, void *arg);
void weft__emu_hwc_free(weft__emu_hwc *h);

#endif
