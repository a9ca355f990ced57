//===- attn_reference_internal.h - Shared pieces of the attention reference ===//
//
// What attn_reference.c (the forward) and attn_reference_grad.c (the
// backward) share: the problem's validation and the masks. Not installed;
// lib/Reference only.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_REFERENCE_INTERNAL_H
#define ATTN_REFERENCE_INTERNAL_H

#include "lib/Reference/attn_reference.h"

/// True when p is well formed (what attn_reference checks before it
/// computes).
bool attn_ref_valid(const struct attn_ref_problem *p);

/// True when key j is visible to query i of batch b, head h (every mask).
bool attn_ref_visible(const struct attn_ref_problem *p, int64_t b, int64_t h,
                      int64_t i, int64_t j);

#endif // ATTN_REFERENCE_INTERNAL_H
