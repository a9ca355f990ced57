//===- attn_mlir.h - libattn entry points over MLIR C API handles ---------===//
//
// For compilers that build IR with the MLIR C API (mlir-c/IR.h) rather than
// text: load the attn dialects into their context, and compile a module.
// Needs the MLIR 22 C API headers; the MLIR the caller links must be the
// libMLIR.so libattn links (MLIR handles do not cross MLIR builds).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_ATTN_MLIR_H
#define ATTN_ATTN_MLIR_H

#include "attn/attn.h"

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Loads the attn, tile and comm dialects into ctx so that the caller can
/// build and parse their ops. Returns ATTN_ERR_INVALID_ARGUMENT for a null
/// context, ATTN_ERR_COMPILE (with diagnostics to diag) when loading fails.
ATTN_API enum attn_status attn_mlir_register_dialects(MlirContext ctx,
                                                      attn_diag_fn diag,
                                                      void *user);

/// As attn_compile for module, which is printed (generic form, with its
/// locations) and compiled in a context of libattn's own; module is neither
/// changed nor kept. Returns ATTN_ERR_INVALID_ARGUMENT for a null module.
ATTN_API enum attn_status
attn_compile_module(MlirModule module, const struct attn_compile_options *opts,
                    attn_diag_fn diag, void *user, attn_result **out);

#ifdef __cplusplus
}
#endif

#endif // ATTN_ATTN_MLIR_H
