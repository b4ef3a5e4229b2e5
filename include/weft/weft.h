/* SPDX-License-Identifier: MIT */
/*
 * weft/weft.h - the umbrella header of libweft: include only this one.
 *
 * libweft reads, checks and converts execution traces of parallel
 * programs (ovni, Heph, ROSS, Pallas) through one reading API.
 */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
#define WEFT_VERSION_STRING "0.1.0"

#include "weft/error.h"
#include "weft/trace.h"
#include "weft/progress.h"
#include "weft/event.h"
#include "weft/ovni.h"
#include "weft/heph.h"
#include "weft/pallas.h"
#include "weft/pallas_grammar.h"
#include "weft/convert.h"
#include "weft/output.h"
#include "weft/writer.h"
#include "weft/dump.h"
#include "weft/outfile.h"
#include "weft/counts.h"
#include "weft/span.h"
#include "weft/profile.h"
#include "weft/check.h"
#include "weft/emu.h"
#include "weft/ross.h"
#include "weft/stats.h"
#include "weft/dist.h"
#include "weft/schema.h"
#include "weft/api.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

/* Version of the library actually linked ("0.1.0"). */
const char *weft_version(void);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WEFT_H */
