//===- launch_util.h - Helpers of the launch, tensor map, program tests ---===//
//
// Builders of launch arguments and a reader of the mock's tensor map bytes,
// shared by launch_test.c, tensormap_test.c and program_test.c.

#ifndef ATTNRT_LAUNCH_UTIL_H
#define ATTNRT_LAUNCH_UTIL_H

#include "attnrt.h"

#include <stdint.h>
#include <string.h>

static inline struct attnrt_arg arg_ptr(attnrt_devptr p) {
  struct attnrt_arg a = {ATTNRT_ARG_PTR, {.ptr = p}};
  return a;
}
static inline struct attnrt_arg arg_i32(int32_t v) {
  struct attnrt_arg a = {ATTNRT_ARG_I32, {.i32 = v}};
  return a;
}
static inline struct attnrt_arg arg_i64(int64_t v) {
  struct attnrt_arg a = {ATTNRT_ARG_I64, {.i64 = v}};
  return a;
}
static inline struct attnrt_arg arg_f32(float v) {
  struct attnrt_arg a = {ATTNRT_ARG_F32, {.f32 = v}};
  return a;
}

/// Reads word i of a mock tensor map's bytes.
static inline uint64_t map_word(const unsigned char *bytes, int i) {
  uint64_t w;
  memcpy(&w, bytes + 8 * i, sizeof w);
  return w;
}

#endif // ATTNRT_LAUNCH_UTIL_H
