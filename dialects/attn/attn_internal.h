//===- attn_internal.h - Shared inside dialects/attn only -----------------===//
#ifndef ATTN_ATTN_INTERNAL_H
#define ATTN_ATTN_INTERNAL_H

#include "dialects/attn/attn_dialect.h"

#include <stddef.h>

/// Reads an attn.fused op's configuration like attn_fused_get_config, and on
/// failure writes what is wrong (an LLVM-style message) into err.
bool attn_fused_read(MlirOperation op, struct attn_fused_config *out, char *err,
                     size_t errlen);

/// Reads an attn.fused_decode op like attn_decode_get_config, writing what
/// is wrong into err on failure.
bool attn_decode_read(MlirOperation op, struct attn_decode_config *out,
                      char *err, size_t errlen);

/// Reads an attn.cache_append op like attn_cache_append_get_config, writing
/// what is wrong into err on failure.
bool attn_cache_append_read(MlirOperation op, struct attn_append_config *out,
                            char *err, size_t errlen);

#endif // ATTN_ATTN_INTERNAL_H
