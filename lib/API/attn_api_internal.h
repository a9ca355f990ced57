//===- attn_api_internal.h - What the libattn sources share ---------------===//
#ifndef ATTN_API_INTERNAL_H
#define ATTN_API_INTERNAL_H

#include "attn/attn.h"

#include "mlir-c/IR.h"

#include <stdbool.h>

/// One call into libattn: its own context, the caller's diagnostic callback
/// and the options after validation.
struct attn_session {
  MlirContext ctx;
  attn_diag_fn diag;
  void *user;
  const char *source_name;
  int errors;
  bool cpu;                          ///< target "cpu"
  bool explicit_chip;                ///< the caller named the chip
  char chip[16];                     ///< GPU chip ("sm_90a")
  char features[16];                 ///< "+ptxNN" or ""
  const char *tile_options;          ///< never NULL
  const char *hopper_options;        ///< never NULL
  bool grad;                         ///< run attn-grad after attn-fuse
  const char *toolkit;               ///< resolved toolkit folder (GPU)
  enum attn_output_format format;    ///< never ATTN_OUTPUT_DEFAULT
};

/// Validates opts (NULL: defaults) into s and creates s's context with the
/// dialects loaded and a handler forwarding diagnostics to diag. Returns
/// ATTN_OK, or a status after reporting; s->ctx is null only when nothing
/// was created. Release with attn_session_end.
enum attn_status attn_session_begin(struct attn_session *s,
                                    const struct attn_compile_options *opts,
                                    attn_diag_fn diag, void *user);

/// Destroys s's context (NULL-safe).
void attn_session_end(struct attn_session *s);

/// Reports an error without a location to the callback and the thread's last
/// error; returns status.
enum attn_status attn_session_fail(struct attn_session *s,
                                   enum attn_status status, const char *fmt,
                                   ...) __attribute__((format(printf, 3, 4)));

/// Parses and verifies text as a module (wrapped in one when it is not) and
/// lowers it for the CPU to the LLVM dialect, storing the module (owned by
/// the caller, in s->ctx) in *module and the manifest (malloc'ed) in
/// *manifest. Returns a status after reporting.
enum attn_status attn_session_lower_cpu(struct attn_session *s,
                                        const char *text, size_t len,
                                        MlirOperation *module,
                                        char **manifest);

/// Sets the thread's last error to the formatted message.
void attn_set_last_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

#endif // ATTN_API_INTERNAL_H
