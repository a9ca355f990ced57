//===- attn_opt.h - Pieces of attn-opt shared between its files -----------===//
#ifndef ATTN_OPT_H
#define ATTN_OPT_H

#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

//===-- split_input.c -----------------------------------------------------===//

/// One chunk of a --split-input-file input: blank lines stand in for the
/// lines before it, so diagnostics keep the original line numbers.
struct attn_chunk {
  char *text;
  unsigned first_line; ///< 1-based line of the chunk's first line
};

/// Splits buf on lines that are exactly `// -----`. Returns the number of
/// chunks (stored in *out, caller frees with attn_chunks_free) or 0 on
/// allocation failure.
size_t attn_split_input(const char *buf, struct attn_chunk **out);
void attn_chunks_free(struct attn_chunk *chunks, size_t n);

//===-- verify_diagnostics.c ----------------------------------------------===//

struct attn_verifier;

/// Collects the `expected-(error|warning|remark|note)` annotations of text
/// (with @+N, @-N, @above, @below). Returns NULL on allocation failure.
struct attn_verifier *attn_verifier_create(const char *text,
                                           const char *filename);

/// Records one emitted diagnostic (and its notes).
void attn_verifier_record(struct attn_verifier *v, MlirDiagnostic d);

/// Records one remark of a pass (attn_remark_fn's arguments).
void attn_verifier_record_remark(struct attn_verifier *v, MlirLocation loc,
                                 const char *msg);

/// Matches emitted against expected diagnostics, prints each mismatch to err
/// as `file:line: error: ...`. Returns the number of mismatches.
int attn_verifier_finish(struct attn_verifier *v, FILE *err);

void attn_verifier_destroy(struct attn_verifier *v);

#endif // ATTN_OPT_H
