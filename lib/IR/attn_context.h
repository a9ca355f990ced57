//===- attn_context.h - Context set-up and diagnostics for attn tools -----===//
#ifndef ATTN_CONTEXT_H
#define ATTN_CONTEXT_H

#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"

#include <stdbool.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

//===-- Context -----------------------------------------------------------===//

/// Creates a context with every upstream dialect and LLVM translation
/// registered and upstream passes known to the pipeline parser. The attn
/// dialects are not loaded yet: attach a diagnostic handler, then call
/// attn_register_all so that loading problems are reported.
/// Caller owns the result; release with mlirContextDestroy.
MlirContext attn_context_create(void);

/// Loads the attn, tile and comm dialects (embedded IRDL, or irdl_override
/// when not NULL). Returns false with an error diagnostic on failure.
bool attn_register_all(MlirContext ctx, const char *irdl_override);

//===-- Diagnostics -------------------------------------------------------===//

/// Counts what a handler printed; tools exit 1 when errors > 0.
struct attn_diag_sink {
  FILE *out;    // where diagnostics go (stderr in tools)
  int errors;   // error diagnostics seen
  int warnings; // warning diagnostics seen
};

/// Attaches a handler that prints `file:line:col: severity: message` (and
/// its notes) to sink->out and counts errors. sink must outlive the context
/// or be detached. Returns the handler id.
MlirDiagnosticHandlerID attn_diag_attach(MlirContext ctx,
                                         struct attn_diag_sink *sink);

/// "error", "warning", "note" or "remark".
const char *attn_severity_name(MlirDiagnosticSeverity s);

/// Unwraps name, call-site and fused locations to the file location inside.
/// Returns false when there is none (unknown location).
bool attn_location_file_line(MlirLocation loc, MlirStringRef *file,
                             int *line, int *col);

/// Prints `file:line:col` (or `<unknown>`) for loc to out.
void attn_location_print(MlirLocation loc, FILE *out);

/// Reports text that MLIR failed to parse without a word: IRDL gives the
/// attn, tile and comm ops no custom syntax, so `%s = attn.qk %q, %k : ...`
/// fails silently. Emits one error saying to use the generic form, at the
/// first such op of text (named filename) when it finds one and filename is
/// not NULL, else at an unknown location. Call it only when parsing failed
/// and no error was reported.
void attn_emit_parse_hint(MlirContext ctx, const char *text,
                          const char *filename);

//===-- Nesting depth -----------------------------------------------------===//

/// The deepest nesting attn hands to MLIR's parser. Its parser recurses
/// once per open bracket, region, '<' and chained affine operator and
/// overflows the stack (SIGSEGV) a few thousand levels deep; 256 keeps it
/// under 1 MiB of stack, far below the 8 MiB default, and far above
/// anything attn writes or reads (its own programs nest below 32).
#define ATTN_MAX_NESTING 256

/// Checks that text (len bytes, or up to its NUL when len is 0) nests no
/// deeper than ATTN_MAX_NESTING: each open `(`, `[`, `{` or `<` (not `->`,
/// `>=`) outside strings and `//` comments counts one, and so does each
/// chained `+`, `-`, `*`, `floordiv`, `ceildiv` or `mod` of an expression.
/// The same scan refuses a dense array of index (`array<index: ...>`),
/// which MLIR 22's parser crashes on. Returns false after one error at
/// filename:line:col, where the limit is crossed (or at `array`). Call it
/// before parsing untrusted text.
bool attn_check_nesting(MlirContext ctx, const char *text, size_t len,
                        const char *filename);

//===-- Remarks -----------------------------------------------------------===//

/// Receives a remark: msg at loc (both borrowed for the call).
typedef void (*attn_remark_fn)(void *user, MlirLocation loc, const char *msg);

/// Routes the remarks of passes running in ctx (attn-fuse: why a chain
/// stayed unfused) to fn. The installed MLIR C API emits errors only
/// (mlirEmitError), so remarks take this side channel; without a handler
/// they are dropped. Detach before destroying ctx. Returns false when too
/// many contexts have one.
bool attn_remark_handler_attach(MlirContext ctx, attn_remark_fn fn,
                                void *user);

/// Detaches ctx's remark handler (none: a no-op).
void attn_remark_handler_detach(MlirContext ctx);

/// Sends a printf-style remark at op's location to its context's handler.
void attn_emit_remarkf(MlirOperation op, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

//===-- Building IR from text ---------------------------------------------===//

/// A growable NUL-terminated string; zero-initialise, append, then free(buf).
/// On allocation failure `failed` is set and further appends are ignored.
struct attn_strbuf {
  char *buf;
  size_t len, cap;
  bool failed;
};

/// Appends printf-style text to b.
void attn_strbuf_printf(struct attn_strbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/// An MlirStringCallback appending to the attn_strbuf passed as user data.
void attn_strbuf_append(MlirStringRef s, void *user);

/// Appends the textual form of t to b.
void attn_strbuf_type(struct attn_strbuf *b, MlirType t);

/// Appends the textual form of a to b.
void attn_strbuf_attr(struct attn_strbuf *b, MlirAttribute a);

/// Releases b's storage and zeroes it.
void attn_strbuf_free(struct attn_strbuf *b);

/// Parses one operation (with its regions) from text, attributing locations
/// to source_name. Returns a null operation, with the parser's diagnostics,
/// on failure. Caller owns the result (insert it into a block or destroy it).
MlirOperation attn_parse_op(MlirContext ctx, const char *text,
                            const char *source_name);

#ifdef __cplusplus
}
#endif

#endif // ATTN_CONTEXT_H
