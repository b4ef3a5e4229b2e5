/* SPDX-License-Identifier: MIT */
/*
 * emu/model_mark.h - marks of the ovni model (OM[ OM] OM=, libovni's
 * ovni_mark_*): one channel per mark type declared in the threads'
 * metadata (ovni.mark), Paraver type 100 + the mark type.
 */
#ifndef WEFT_EMU_MODEL_MARK_H
#define WEFT_EMU_MODEL_MARK_H

#include "emu/engine.h"

typedef struct weft__emu_mark weft__emu_mark;

/* Reads the mark types of every thread and declares their channels. */
int weft__emu_mark_create(weft__emu *e, weft__emu_mark **out);
/* An OM event of the thread. */
int weft__emu_mark_event(weft__emu *e, weft__emu_mark *m, const weft__emu_ev *ev);
/* The mark types and their labels, in a .pcf. */
int weft__emu_mark_pcf(weft__emu *e, const weft__emu_mark *m, weft__emu_kind kind,
		       weft__emu_pcf *pcf);
void weft__emu_mark_free(weft__emu_mark *m);

#endif
