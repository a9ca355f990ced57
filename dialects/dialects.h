//===- dialects.h - Loading, verifying and reading the attn dialects ------===//
//
// The attn, tile and comm dialects are declared in IRDL (embedded at build
// time) and checked further by one C verifier each. This header is the one
// the rest of the project includes: loading, verification, the diagnostic
// helper every verifier and pass uses, and typed readers for attributes.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECTS_H
#define ATTN_DIALECTS_H

#include "mlir-c/IR.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

//===-- Loading -----------------------------------------------------------===//

/// Loads the attn, tile and comm dialects into ctx from the embedded IRDL, or
/// from irdl_override (a file of IRDL text) when not NULL. Returns false with
/// an error diagnostic on failure.
bool attn_dialects_load(MlirContext ctx, const char *irdl_override);

/// Runs the C verifier of every attn dialect over root and everything nested
/// in it. Returns false when any op is wrong; each problem is one error
/// diagnostic at the op's location.
bool attn_dialects_verify(MlirOperation root);

/// The per-dialect verifiers (called by attn_dialects_verify on each op).
/// Return false after emitting a diagnostic.
bool attn_attn_verify_op(MlirOperation op);
bool attn_tile_verify_op(MlirOperation op);
bool attn_comm_verify_op(MlirOperation op);

/// Checks a function's tile.matmul attribute, if any, against its
/// arguments. Returns false after emitting a diagnostic.
bool attn_tile_verify_matmul_kernel(MlirOperation func);

/// Checks the comm.topology attribute on op, if any (any op may carry one).
/// Returns false after emitting a diagnostic.
bool attn_comm_verify_topology(MlirOperation op);

//===-- Diagnostics -------------------------------------------------------===//

/// Emits an error at op's location (printf-style, LLVM message style:
/// lower-case, no final period). Always returns false so callers can write
/// `return attn_emit_errorf(op, ...)`.
bool attn_emit_errorf(MlirOperation op, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/// Same, at a location.
bool attn_emit_error_atf(MlirLocation loc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

//===-- Reading ops and attributes ----------------------------------------===//

/// True when op's name is exactly name.
bool attn_op_is(MlirOperation op, const char *name);

/// Typed attribute readers. Each returns false (emitting nothing) when the
/// attribute is absent or of another kind; the caller reports.
bool attn_attr_f64(MlirOperation op, const char *name, double *out);
bool attn_attr_i64(MlirOperation op, const char *name, int64_t *out);
bool attn_attr_bool(MlirOperation op, const char *name, bool *out);
/// The string is borrowed from the context; it lives as long as ctx.
bool attn_attr_str(MlirOperation op, const char *name, MlirStringRef *out);
/// True when op's first block (a module's, a gpu.module's) holds an op
/// whose sym_name is name.
bool attn_has_symbol(MlirOperation op, const char *name);

/// The attribute named name on op, or a null attribute.
MlirAttribute attn_attr_get(MlirOperation op, const char *name);

/// Writes op's name into buf (truncated to len). Returns buf.
char *attn_op_name(MlirOperation op, char *buf, size_t len);

/// True when s equals the NUL-terminated lit.
bool attn_str_eq(MlirStringRef s, const char *lit);

/// Reads a ranked, statically shaped tensor or memref type into dims (at most
/// 8). Returns the rank, or -1 when t is unranked, dynamic or too deep.
int attn_static_shape(MlirType t, int64_t dims[8]);

/// Writes t's size in bytes (a static tensor or memref of int, index or
/// float elements; sub-byte elements round up) into *bytes. Returns false
/// when t is not one or its size overflows int64_t, which 64-bit index
/// arithmetic over it would too.
bool attn_static_bytes(MlirType t, int64_t *bytes);

/// Checks that t's size in bytes fits in i64 (attn_static_bytes), as the
/// kernels' 64-bit index arithmetic over it needs; otherwise an error at op
/// naming what (e.g. "q") and t. Returns whether it fits.
bool attn_check_static_bytes(MlirOperation op, MlirType t, const char *what);

/// The float type attention programs of element type elem compute in: f64
/// for f64 (the CPU path's float64 programs, issue 29's gradcheck), f32 for
/// f32, f16 and bf16. Tiles, softmax state, lse, the gate and score bodies
/// are of this type.
MlirType attn_compute_type(MlirType elem);

/// Writes a type's textual form into buf (truncated to len). Returns buf.
char *attn_type_str(MlirType t, char *buf, size_t len);

/// Writes an attribute's textual form into buf (truncated to len). Returns
/// buf.
char *attn_attribute_str(MlirAttribute a, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif // ATTN_DIALECTS_H
