//===- tool_util.h - Input, parsing and output shared by the attn tools ---===//
#ifndef ATTN_TOOL_UTIL_H
#define ATTN_TOOL_UTIL_H

#include "mlir-c/IR.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/// Reads a whole file ("-" or NULL: standard input) into a NUL-terminated
/// buffer. Returns NULL and prints `tool: error: ...` on failure. Caller
/// frees the result.
char *attn_tool_read_input(const char *tool, const char *path, size_t *len);

/// Parses text as a module named filename for locations. Text that is not
/// already one `module { ... }` is wrapped in one without moving any line.
/// Returns a null op after the parser's diagnostics on failure. Caller owns
/// the result (mlirOperationDestroy).
MlirOperation attn_tool_parse_module(MlirContext ctx, const char *text,
                                     const char *filename);

/// Opens path for writing ("-" or NULL: standard output). Returns NULL and
/// prints `tool: error: ...` on failure.
FILE *attn_tool_open_output(const char *tool, const char *path,
                            const char *mode);

/// Closes f unless it is stdout; returns false (after a message) when the
/// write failed.
bool attn_tool_close_output(const char *tool, FILE *f);

/// Runs a textual pipeline (lib/Transforms' grammar) on module. A bad
/// pipeline is reported as `tool: error: ...`; the passes report through
/// the context's diagnostics. Returns false on either.
bool attn_tool_run_pipeline(const char *tool, MlirOperation module,
                            const char *pipeline);

/// Prints op to f in MLIR's generic-op-free default form, ending in '\n'.
void attn_tool_print_op(MlirOperation op, FILE *f);

#endif // ATTN_TOOL_UTIL_H
