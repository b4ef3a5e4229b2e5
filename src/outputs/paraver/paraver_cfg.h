/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_cfg.h - the Paraver views (.cfg) of an emulated
 * output (paraver_cfg.c): ovni's own views copied from an ovni
 * installation into OUT/cfg/, as ovniemu copies them, and the views the
 * emulator makes for the trace (docs/paraver.md, "ovni traces").
 */
#ifndef WEFT_OUTPUTS_PARAVER_CFG_H
#define WEFT_OUTPUTS_PARAVER_CFG_H

#include <stddef.h>

#include "emu/emu.h"

/* Files a view directory may hold at most, and bytes per file: ovni 1.14
 * ships 53 views of 2-4 kB; the limits keep a wrong DIR harmless. */
#define WEFT__CFG_FILES_MAX 4096
#define WEFT__CFG_FILE_MAX (1u << 20)

/*
 * Writes `len` bytes of `data` as the new file `path`, synced: the small
 * files of the emulated output (.pcf, .row, views). 0, or WEFT_EIO naming
 * `name` (NULL: the path).
 */
int weft__paraver_write_whole(const char *path, const void *data, size_t len,
			      const char *name);

/*
 * The directory of ovni's views that weft_convert_options.ovni_cfg names:
 * NULL: the first of $OVNI_CONFIG_DIR, /usr/local/share/ovni and
 * /usr/share/ovni that holds views (a thread/ or cpu/ directory), else
 * none; "": none; else that directory, which must hold views
 * (WEFT_EINVAL, with the path and what was expected). *out is a malloc'd
 * path or NULL (none). 0 or < 0.
 */
int weft__cfg_source(const char *option, char **out);

/*
 * Copies the views (the *.cfg files of `src`'s thread/ and cpu/ trees, at
 * most 4 levels deep, within the limits above) into directory `dst`
 * (made when missing); *copied counts them. 0, or WEFT_EIO naming the
 * file.
 */
int weft__cfg_copy(const char *src, const char *dst, size_t *copied);

/*
 * Writes the views the emulator makes for this trace
 * (weft__emu_views(): the nOS-V hardware counters') below directory
 * `dst`; *written counts them. 0 or < 0.
 */
int weft__cfg_write_generated(weft__emu *e, const char *dst, size_t *written);

#endif
