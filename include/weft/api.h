/* SPDX-License-Identifier: MIT */
/*
 * weft/api.h - what marks the public API: libweft.so is built with
 * -fvisibility=hidden, and every public header puts its declarations
 * between WEFT_API_BEGIN and WEFT_API_END, which give them default
 * visibility. So the shared library exports the functions declared in
 * include/weft/ and nothing else (the weft__ internals stay inside it).
 */
#ifndef WEFT_API_H
#define WEFT_API_H

#if defined(__GNUC__) || defined(__clang__)
#define WEFT_API_BEGIN _Pragma("GCC visibility push(default)")
#define WEFT_API_END _Pragma("GCC visibility pop")
#else
#define WEFT_API_BEGIN
#define WEFT_API_END
#endif

#endif /* WEFT_API_H */
