//===- tool_util.h - Input, parsing and output shared by the attn tools ---===//
#ifndef ATTN_TOOL_UTIL_H
#define ATTN_TOOL_UTIL_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/// Reads a whole file ("-" or NULL: standard input) into a NUL-terminated
/// buffer. Returns NULL and prints `tool: error: ...` on failure. Caller
/// frees the result.
char *attn_tool_read_input(const char *tool, const char *path, size_t *len);

/// Parses text as a module named filename for locations. Text that is not
/// already one `module { ... }` is wrapped in one without moving any line.
/// Text nested deeper than ATTN_MAX_NESTING is refused before parsing
/// (attn_check_nesting), with a located error.
/// Returns a null op after the parser's diagnostics on failure (or, when
/// the parser said nothing, the custom-syntax hint of
/// attn_emit_parse_hint). Caller owns the result (mlirOperationDestroy).
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
/// the context's diagnostics (a pass that fails without one gets
/// `tool: error: pass pipeline '...' failed`). IR is printed around each
/// pass as attn_tool_set_ir_printing asked. Returns false on failure.
bool attn_tool_run_pipeline(const char *tool, MlirOperation module,
                            const char *pipeline);

/// Prints op to f in MLIR's generic-op-free default form, ending in '\n'.
void attn_tool_print_op(MlirOperation op, FILE *f);

//===-- Command line ------------------------------------------------------===//

/// One option of a tool, for --help: name with its value (`--seed=<n>`),
/// the value's type ("flag", "integer", "string", ...), the default and
/// what it does. A table ends with a NULL name.
struct attn_tool_option {
  const char *name, *type, *def, *help;
};

/// Prints the options of table to f, one line each:
/// `  --name=<v>   help (type, default: def)`.
void attn_tool_print_options(FILE *f, const struct attn_tool_option *table);

/// The options every tool takes (--help, --version, the IR printing
/// flags), for the end of a tool's table.
extern const struct attn_tool_option attn_tool_common_options[];

/// mlir-opt's convention: `-long-option` means `--long-option`. Returns a
/// copy of argv where every option of one dash and more than one letter
/// (`-split-input-file`, `-pass-pipeline=...`) has two; single letters
/// (`-o`, `-h`), `-` and the word after `-o` are kept. NULL after a message
/// when out of memory. Release with attn_tool_args_free.
char **attn_tool_args(const char *tool, int argc, char **argv);

/// Releases what attn_tool_args returned for the same argc and argv.
void attn_tool_args_free(int argc, char **args, char **argv);

/// Handles the options every tool shares: --version (prints the tool,
/// attn's and MLIR's versions; *exit_now is set) and the IR printing flags.
/// Returns false when a is none of them.
bool attn_tool_common_arg(const char *tool, const char *a, bool *exit_now);

/// Prints IR before and/or after each pass of every pipeline that
/// attn_tool_run_pipeline or attn_tool_pm_setup sets up, to stderr
/// (mlir-opt's --mlir-print-ir-before-all / --mlir-print-ir-after-all).
void attn_tool_set_ir_printing(bool before, bool after);

/// Applies the IR printing chosen with attn_tool_set_ir_printing to pm.
void attn_tool_pm_setup(MlirPassManager pm);

//===-- Diagnostics -------------------------------------------------------===//

/// Counts the remarks a tool printed (attn-fuse's: why a chain did not
/// fuse), so that a later failure can point to them.
struct attn_tool_remarks {
  FILE *out;   // where they go (stderr)
  int printed; // how many so far
};

/// An attn_remark_fn printing `file:line:col: remark: msg` to the
/// attn_tool_remarks user points to, counting it.
void attn_tool_print_remark(void *user, MlirLocation loc, const char *msg);

/// Prints the remarks of passes running in ctx to r->out as
/// `file:line:col: remark: ...`. Detach with attn_remark_handler_detach
/// before destroying ctx.
void attn_tool_attach_remarks(MlirContext ctx, struct attn_tool_remarks *r);

/// After a failure: when remarks were printed, adds
/// `tool: note: attn-fuse left ... unfused; the remark above says why`.
void attn_tool_note_remarks(const char *tool,
                            const struct attn_tool_remarks *r);

#endif // ATTN_TOOL_UTIL_H
