//===- attn_api.c - libattn: compile IR text to PTX/cubin or CPU code -----===//
//
// The public compile API (include/attn/attn.h). Each call builds its own
// MLIR context, forwards diagnostics to the caller's callback, validates
// every option before anything reaches LLVM (a bad chip/PTX pair ends the
// process inside LLVM), runs whatever attn passes the input still needs and
// emits through lib/Target.
//
//===----------------------------------------------------------------------===//
#include "lib/API/attn_api_internal.h"

#include "dialects/dialects.h"
#include "dialects/tile/tile_dialect.h"
#include "lib/IR/attn_context.h"
#include "lib/Target/attn_target.h"
#include "lib/Transforms/transforms.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Target/LLVMIR.h"
#include "llvm-c/Core.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct attn_result {
  enum attn_output_format format;
  char *data; // NUL-terminated past size for text formats
  size_t size;
  char *manifest;
};

//===-- Status and last error ---------------------------------------------===//

static _Thread_local char last_error[2048];

void attn_set_last_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
}

ATTN_API const char *attn_last_error(void) { return last_error; }

ATTN_API const char *attn_status_string(enum attn_status status) {
  switch (status) {
  case ATTN_OK:
    return "success";
  case ATTN_ERR_INVALID_ARGUMENT:
    return "invalid argument";
  case ATTN_ERR_PARSE:
    return "the input does not parse or verify";
  case ATTN_ERR_COMPILE:
    return "compilation failed";
  case ATTN_ERR_NO_TOOLKIT:
    return "CUDA toolkit not found";
  case ATTN_ERR_NOT_FOUND:
    return "not found";
  case ATTN_ERR_OUT_OF_MEMORY:
    return "out of memory";
  }
  return "unknown status";
}

#define STR2(x) #x
#define STR(x) STR2(x)
ATTN_API const char *attn_version(void) {
  return STR(ATTN_VERSION_MAJOR) "." STR(ATTN_VERSION_MINOR) "." STR(
      ATTN_VERSION_PATCH);
}

ATTN_API void attn_compile_options_init(struct attn_compile_options *opts) {
  if (opts)
    *opts = (struct attn_compile_options){.format = ATTN_OUTPUT_DEFAULT};
}

//===-- Diagnostics -------------------------------------------------------===//

static void deliver(struct attn_session *s, int severity, const char *file,
                    int line, int col, const char *msg) {
  if (severity == ATTN_SEVERITY_ERROR && s->errors++ == 0) {
    if (file)
      attn_set_last_error("%s:%d:%d: error: %s", file, line, col, msg);
    else
      attn_set_last_error("error: %s", msg);
  }
  if (s->diag)
    s->diag(s->user, severity, file, line, col, msg);
}

static void forward(struct attn_session *s, MlirDiagnostic d, int severity) {
  MlirStringRef file;
  int line = 0, col = 0;
  char name[512];
  const char *fp = NULL;
  if (attn_location_file_line(mlirDiagnosticGetLocation(d), &file, &line,
                              &col)) {
    // The parser names the buffer "-": that is the caller's source.
    if (file.length == 0 || (file.length == 1 && file.data[0] == '-'))
      fp = s->source_name;
    else {
      snprintf(name, sizeof name, "%.*s", (int)file.length, file.data);
      fp = name;
    }
  }
  struct attn_strbuf msg = {0};
  mlirDiagnosticPrint(d, attn_strbuf_append, &msg);
  deliver(s, severity, fp, line, col, msg.buf && !msg.failed ? msg.buf : "");
  attn_strbuf_free(&msg);
  for (intptr_t i = 0, n = mlirDiagnosticGetNumNotes(d); i < n; ++i)
    forward(s, mlirDiagnosticGetNote(d, i), ATTN_SEVERITY_NOTE);
}

static MlirLogicalResult handle_diag(MlirDiagnostic d, void *user) {
  forward(user, d, (int)mlirDiagnosticGetSeverity(d));
  return mlirLogicalResultSuccess();
}

enum attn_status attn_session_fail(struct attn_session *s,
                                   enum attn_status status, const char *fmt,
                                   ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  deliver(s, ATTN_SEVERITY_ERROR, NULL, 0, 0, msg);
  return status;
}

//===-- Options -----------------------------------------------------------===//

/// The oldest PTX ISA of a chip (lib/Transforms' table), or -1.
static int chip_min_ptx(const char *chip, size_t len) {
  return attn_chip_min_ptx(chip, len);
}
enum { MAX_PTX = ATTN_MAX_PTX };

/// Parses "+ptxNN"; returns NN or -1.
static int parse_ptx(const char *s, size_t len) {
  char buf[16], tail;
  int v;
  if (len >= sizeof buf)
    return -1;
  memcpy(buf, s, len);
  buf[len] = '\0';
  return sscanf(buf, "+ptx%d%c", &v, &tail) == 1 && v >= 60 && v <= MAX_PTX
             ? v
             : -1;
}

static bool is_dir_with(const char *dir, const char *sub, bool want_dir) {
  char path[1024];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", dir, sub);
  return stat(path, &st) == 0 && (want_dir ? S_ISDIR(st.st_mode)
                                           : S_ISREG(st.st_mode));
}

static const char *format_name(enum attn_output_format f) {
  static const char *names[] = {"default", "ptx", "cubin", "llvm-mlir",
                                "llvm-ir"};
  return names[f];
}

static enum attn_status check_options(struct attn_session *s,
                                      const struct attn_compile_options *o) {
  if (!o->target || !*o->target) {
    snprintf(s->chip, sizeof s->chip, "sm_90a");
  } else if (!strcmp(o->target, "cpu")) {
    s->cpu = true;
  } else if (chip_min_ptx(o->target, strlen(o->target)) < 0) {
    return attn_session_fail(s, ATTN_ERR_INVALID_ARGUMENT,
                             "unknown target '%s' (expected cpu, sm_70, "
                             "sm_75, sm_80, sm_86, sm_87, sm_89, sm_90 or "
                             "sm_90a)",
                             o->target);
  } else {
    snprintf(s->chip, sizeof s->chip, "%s", o->target);
    s->explicit_chip = true;
  }
  if ((unsigned)o->format > ATTN_OUTPUT_LLVM_IR)
    return attn_session_fail(s, ATTN_ERR_INVALID_ARGUMENT,
                             "unknown output format %d", (int)o->format);
  s->format = o->format;
  if (s->format == ATTN_OUTPUT_DEFAULT)
    s->format = s->cpu ? ATTN_OUTPUT_LLVM_MLIR : ATTN_OUTPUT_PTX;
  bool cpu_format =
      s->format == ATTN_OUTPUT_LLVM_MLIR || s->format == ATTN_OUTPUT_LLVM_IR;
  if (cpu_format != s->cpu)
    return attn_session_fail(s, ATTN_ERR_INVALID_ARGUMENT,
                             "output format %s needs %s, not target '%s'",
                             format_name(s->format),
                             cpu_format ? "target cpu" : "a GPU target",
                             s->cpu ? "cpu" : s->chip);
  if (o->features && *o->features) {
    if (s->cpu)
      return attn_session_fail(s, ATTN_ERR_INVALID_ARGUMENT,
                               "features apply to GPU targets, not cpu");
    int ptx = parse_ptx(o->features, strlen(o->features));
    if (ptx < 0)
      return attn_session_fail(s, ATTN_ERR_INVALID_ARGUMENT,
                               "features must be +ptxNN with NN in [60, %d], "
                               "found '%s'",
                               MAX_PTX, o->features);
    int min = chip_min_ptx(s->chip, strlen(s->chip));
    if (ptx < min)
      return attn_session_fail(s, ATTN_ERR_INVALID_ARGUMENT,
                               "%s needs PTX ISA %d.%d or newer, found "
                               "features=%s",
                               s->chip, min / 10, min % 10, o->features);
    snprintf(s->features, sizeof s->features, "%s", o->features);
  }
  s->tile_options = o->tile_options ? o->tile_options : "";
  s->hopper_options = o->hopper_options ? o->hopper_options : "";
  s->grad = o->grad != 0;
  const char *lists[2][2] = {{"tile", s->tile_options},
                             {"hopper", s->hopper_options}};
  for (int i = 0; i < 2; ++i)
    if (strpbrk(lists[i][1], "{}(),\""))
      return attn_session_fail(s, ATTN_ERR_INVALID_ARGUMENT,
                               "%s options must be name=value pairs "
                               "separated by spaces, found '%s'",
                               lists[i][0], lists[i][1]);
  if (s->cpu) {
    if (*s->hopper_options)
      return attn_session_fail(s, ATTN_ERR_INVALID_ARGUMENT,
                               "hopper options apply to GPU targets, not cpu");
    if (o->toolkit)
      return attn_session_fail(s, ATTN_ERR_INVALID_ARGUMENT,
                               "a CUDA toolkit applies to GPU targets, not "
                               "cpu");
    return ATTN_OK;
  }
  if (o->toolkit && !is_dir_with(o->toolkit, "nvvm/libdevice", true))
    return attn_session_fail(s, ATTN_ERR_INVALID_ARGUMENT,
                             "CUDA toolkit '%s' has no nvvm/libdevice folder",
                             o->toolkit);
  s->toolkit = o->toolkit ? o->toolkit : attn_cuda_toolkit_find();
  if (!s->toolkit)
    return attn_session_fail(s, ATTN_ERR_NO_TOOLKIT,
                             "CUDA toolkit not found: set CUDA_HOME (or the "
                             "toolkit option) to a folder holding "
                             "nvvm/libdevice");
  if (s->format == ATTN_OUTPUT_CUBIN &&
      !is_dir_with(s->toolkit, "bin/ptxas", false))
    return attn_session_fail(s, ATTN_ERR_NO_TOOLKIT,
                             "CUDA toolkit '%s' has no bin/ptxas, which a "
                             "cubin needs",
                             s->toolkit);
  return ATTN_OK;
}

/// Adds pipeline to a new pass manager and runs it on module.
static enum attn_status run_pipeline(struct attn_session *s,
                                     MlirOperation module,
                                     const char *pipeline) {
  MlirPassManager pm = mlirPassManagerCreate(s->ctx);
  char err[1024];
  enum attn_status st = ATTN_OK;
  if (!attn_pipeline_add(pm, pipeline, err, sizeof err))
    st = attn_session_fail(s, ATTN_ERR_INVALID_ARGUMENT, "%s", err);
  else if (mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, module)))
    st = s->errors ? ATTN_ERR_COMPILE
                   : attn_session_fail(s, ATTN_ERR_COMPILE,
                                       "pass pipeline '%s' failed", pipeline);
  mlirPassManagerDestroy(pm);
  return st;
}

/// True when options are valid options of pass; else false with the reason
/// in err. Checked on a pass manager that is never run: option errors name
/// the option and the expected values.
static bool check_pass_options(struct attn_session *s, const char *pass,
                               const char *options, char *err, size_t errlen) {
  char p[512];
  snprintf(p, sizeof p, "%s{%s}", pass, options);
  MlirPassManager pm = mlirPassManagerCreate(s->ctx);
  bool ok = attn_pipeline_add(pm, p, err, errlen);
  mlirPassManagerDestroy(pm);
  return ok;
}

enum attn_status attn_session_begin(struct attn_session *s,
                                    const struct attn_compile_options *opts,
                                    attn_diag_fn diag, void *user) {
  memset(s, 0, sizeof *s);
  s->diag = diag;
  s->user = user;
  struct attn_compile_options o;
  attn_compile_options_init(&o);
  if (opts)
    o = *opts;
  s->source_name = o.source_name && *o.source_name ? o.source_name : "<input>";
  enum attn_status st = check_options(s, &o);
  if (st != ATTN_OK)
    return st;
  s->ctx = attn_context_create();
  mlirContextAttachDiagnosticHandler(s->ctx, handle_diag, s, NULL);
  if (!attn_register_all(s->ctx, NULL))
    return s->errors ? ATTN_ERR_COMPILE
                     : attn_session_fail(s, ATTN_ERR_COMPILE,
                                         "cannot load the attn dialects");
  char err[1024];
  if (*s->tile_options &&
      !check_pass_options(s, "attn-tile", s->tile_options, err, sizeof err))
    return attn_session_fail(s, ATTN_ERR_INVALID_ARGUMENT,
                             "bad tile options: %s", err);
  // The Hopper options are the kernel lowering's: lower-tile-to-hopper's,
  // or for a decode program lower-tile-to-decode's (gpu_pipeline.c); the
  // module is not parsed yet, so either pass's options are accepted here
  // and the pipeline rejects the other's.
  char derr[1024];
  if (*s->hopper_options &&
      !check_pass_options(s, "lower-tile-to-hopper", s->hopper_options, err,
                          sizeof err) &&
      !check_pass_options(s, "lower-tile-to-decode", s->hopper_options, derr,
                          sizeof derr))
    return attn_session_fail(s, ATTN_ERR_INVALID_ARGUMENT,
                             "bad hopper options: %s (nor, for a decode "
                             "program, lower-tile-to-decode's: %s)",
                             err, derr);
  return ATTN_OK;
}

void attn_session_end(struct attn_session *s) {
  if (!mlirContextIsNull(s->ctx))
    mlirContextDestroy(s->ctx);
  s->ctx = (MlirContext){NULL};
}

//===-- Parsing and stages ------------------------------------------------===//

/// Parses text as a module (MLIR wraps top-level ops that are not one
/// module) and verifies it with MLIR's and the attn dialects' verifiers.
static enum attn_status parse_module(struct attn_session *s, const char *text,
                                     size_t len, MlirOperation *out) {
  *out = (MlirOperation){NULL};
  // Deep nesting would overflow the parser's stack: refuse it first.
  if (!attn_check_nesting(s->ctx, text, len, s->source_name))
    return ATTN_ERR_PARSE;
  MlirModule m = mlirModuleCreateParse(s->ctx, (MlirStringRef){text, len});
  if (mlirModuleIsNull(m)) {
    // IRDL ops have no custom syntax and fail to parse without a word.
    // Unlocated here: text need not end in a NUL.
    if (!s->errors)
      attn_emit_parse_hint(s->ctx, NULL, NULL);
    return ATTN_ERR_PARSE;
  }
  MlirOperation op = mlirModuleGetOperation(m);
  if (!mlirOperationVerify(op) || !attn_dialects_verify(op)) {
    mlirOperationDestroy(op);
    return s->errors ? ATTN_ERR_PARSE
                     : attn_session_fail(s, ATTN_ERR_PARSE,
                                         "the input does not verify");
  }
  *out = op;
  return ATTN_OK;
}

struct stage {
  bool attn, tile, gpu;
};

static MlirWalkResult find_stage(MlirOperation op, void *user) {
  struct stage *s = user;
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (n.length > 5 && !strncmp(n.data, "attn.", 5))
    s->attn = true;
  else if (attn_tile_is_kernel(op))
    s->tile = true;
  else if (attn_str_eq(n, "gpu.module"))
    s->gpu = true;
  return MlirWalkResultAdvance;
}

/// attn: attn ops or a linalg.matmul (attn-tile takes both); tile: tile
/// kernels; gpu: a gpu.module.
static struct stage stage_of(MlirOperation module) {
  struct stage st = {false, false, false};
  mlirOperationWalk(module, find_stage, &st, MlirWalkPreOrder);
  st.attn |= attn_has_matmul(module);
  return st;
}

/// Copies the value of `key = "..."` in an attribute's text into out.
static bool attr_field(const char *text, const char *key, char *out,
                       size_t len) {
  char pat[32];
  snprintf(pat, sizeof pat, "%s = \"", key);
  const char *at = strstr(text, pat);
  if (!at)
    return false;
  at += strlen(pat);
  snprintf(out, len, "%.*s", (int)strcspn(at, "\""), at);
  return true;
}

/// Checks the #nvvm.target of every gpu.module before LLVM sees it.
static enum attn_status check_gpu_targets(struct attn_session *s,
                                          MlirOperation module) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation gm = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(gm); gm = mlirOperationGetNextInBlock(gm)) {
    if (!attn_op_is(gm, "gpu.module"))
      continue;
    MlirAttribute targets = mlirOperationGetAttributeByName(
        gm, mlirStringRefCreateFromCString("targets"));
    if (mlirAttributeIsNull(targets) || !mlirAttributeIsAArray(targets) ||
        mlirArrayAttrGetNumElements(targets) == 0) {
      attn_emit_errorf(gm, "gpu.module has no #nvvm.target");
      return ATTN_ERR_COMPILE;
    }
    for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(targets); ++i) {
      struct attn_strbuf b = {0};
      attn_strbuf_attr(&b, mlirArrayAttrGetElement(targets, i));
      // NVVM's defaults: chip sm_50, features +ptx60.
      char chip[32] = "sm_50", features[32] = "+ptx60";
      bool nvvm = b.buf && !strncmp(b.buf, "#nvvm.target", 12);
      if (nvvm) {
        attr_field(b.buf, "chip", chip, sizeof chip);
        attr_field(b.buf, "features", features, sizeof features);
      }
      attn_strbuf_free(&b);
      int min = chip_min_ptx(chip, strlen(chip));
      int ptx = parse_ptx(features, strlen(features));
      if (!nvvm)
        attn_emit_errorf(gm, "unsupported GPU target (expected #nvvm.target)");
      else if (min < 0)
        attn_emit_errorf(gm, "unsupported chip '%s' (expected sm_70, sm_75, "
                             "sm_80, sm_86, sm_87, sm_89, sm_90 or sm_90a)",
                         chip);
      else if (ptx < 0)
        attn_emit_errorf(gm, "features must be +ptxNN with NN in [60, %d], "
                             "found '%s'",
                         MAX_PTX, features);
      else if (ptx < min)
        attn_emit_errorf(gm, "%s needs PTX ISA %d.%d or newer, found "
                             "features = \"%s\"",
                         chip, min / 10, min % 10, features);
      else if (s->explicit_chip && strcmp(chip, s->chip))
        attn_emit_errorf(gm, "the module targets %s but the options ask for "
                             "%s",
                         chip, s->chip);
      else
        continue;
      return ATTN_ERR_COMPILE;
    }
  }
  return ATTN_OK;
}

/// Runs the attn passes a module still needs to reach the gpu level.
static enum attn_status lower_gpu(struct attn_session *s,
                                  MlirOperation module) {
  struct stage st = stage_of(module);
  if (!st.attn && !st.tile && !st.gpu)
    return attn_session_fail(s, ATTN_ERR_COMPILE,
                             "nothing to compile: the input has no attn ops, "
                             "linalg.matmul, tile kernels or gpu.module");
  if (st.attn) {
    struct attn_strbuf f = {0};
    attn_fuse_pipeline(module, NULL, s->grad, &f);
    enum attn_status rc = f.failed ? attn_session_fail(s, ATTN_ERR_OUT_OF_MEMORY,
                                                       "out of memory")
                                   : run_pipeline(s, module, f.buf);
    attn_strbuf_free(&f);
    if (rc != ATTN_OK)
      return rc;
  }
  if (st.attn || st.tile) {
    // The Hopper kernel where the chip and the program allow it, else the
    // plain path (the same choice attn-translate makes).
    struct attn_strbuf p = {0};
    if (st.attn) {
      attn_gpu_pipeline(module, s->chip, s->features, ATTN_GPU_KERNEL_AUTO,
                        s->tile_options, s->hopper_options, &p);
    } else {
      if (!strcmp(s->chip, "sm_90a"))
        attn_strbuf_printf(&p, "lower-tile-to-hopper{fallback=true %s},",
                           s->hopper_options);
      attn_strbuf_printf(&p, "lower-tile-to-gpu{chip=%s", s->chip);
      if (*s->features)
        attn_strbuf_printf(&p, " features=%s", s->features);
      attn_strbuf_printf(&p, "}");
    }
    enum attn_status rc =
        p.failed ? ATTN_ERR_OUT_OF_MEMORY : run_pipeline(s, module, p.buf);
    attn_strbuf_free(&p);
    if (rc != ATTN_OK)
      return rc;
  }
  return check_gpu_targets(s, module);
}

//===-- The CPU path ------------------------------------------------------===//

/// One manifest entry per tile kernel: name, grid and the memref
/// parameters (names from tile.arg_names).
static cJSON *cpu_kernel_json(MlirOperation func) {
  MlirStringRef sym;
  struct attn_tile_launch launch;
  if (!attn_attr_str(func, "sym_name", &sym) ||
      !attn_tile_get_launch(func, &launch))
    return NULL;
  cJSON *k = cJSON_CreateObject();
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)sym.length, sym.data);
  cJSON_AddStringToObject(k, "name", name);
  cJSON *grid = cJSON_AddArrayToObject(k, "grid");
  for (int i = 0; i < 3; ++i)
    cJSON_AddItemToArray(grid, cJSON_CreateNumber((double)launch.grid[i]));
  attn_manifest_describe(func, "tile", k);
  MlirType fty = mlirTypeAttrGetValue(mlirOperationGetAttributeByName(
      func, mlirStringRefCreateFromCString("function_type")));
  cJSON *params = cJSON_AddArrayToObject(k, "params");
  for (intptr_t i = 0, n = mlirFunctionTypeGetNumInputs(fty); i < n; ++i)
    cJSON_AddItemToArray(params,
                         attn_manifest_param(func, "tile.arg_names",
                                             mlirFunctionTypeGetInput(fty, i),
                                             i));
  return k;
}

static char *cpu_manifest(MlirOperation module, const char *format) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON_AddStringToObject(root, "target", "cpu");
  cJSON_AddStringToObject(root, "format", format);
  // The launch programs attn-tile recorded (the backward's two kernels).
  attn_manifest_add_programs(
      root, mlirOperationGetAttributeByName(
                module, mlirStringRefCreateFromCString(ATTN_TILE_PROGRAMS_ATTR)));
  cJSON *arr = cJSON_AddArrayToObject(root, "kernels");
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  bool ok = true;
  for (MlirOperation f = mlirBlockGetFirstOperation(body);
       ok && !mlirOperationIsNull(f); f = mlirOperationGetNextInBlock(f)) {
    if (!attn_tile_is_kernel(f))
      continue;
    cJSON *k = cpu_kernel_json(f);
    if (k)
      cJSON_AddItemToArray(arr, k);
    ok = k != NULL;
  }
  char *text = ok ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  return text;
}

/// The module attribute that carries the CPU manifest through the
/// LLVM-dialect text, so attn_cpu_kernel_create can take that text back.
#define MANIFEST_ATTR "attn.manifest"

enum attn_status attn_session_lower_cpu(struct attn_session *s,
                                        const char *text, size_t len,
                                        MlirOperation *module,
                                        char **manifest) {
  *manifest = NULL;
  enum attn_status st = parse_module(s, text, len, module);
  if (st != ATTN_OK)
    return st;
  struct stage stg = stage_of(*module);
  MlirStringRef carried;
  if (stg.gpu) {
    attn_emit_errorf(*module, "the input is lowered for the GPU (gpu.module); "
                              "target cpu needs attn or tile IR");
    st = ATTN_ERR_COMPILE;
  } else if (stg.attn || stg.tile) {
    if (stg.attn) {
      char p[600];
      snprintf(p, sizeof p, "attn-fuse,%sattn-tile{%s}",
               s->grad ? "attn-grad," : "", s->tile_options);
      st = run_pipeline(s, *module, p);
    }
    if (st == ATTN_OK) {
      *manifest = cpu_manifest(*module, format_name(s->format));
      st = *manifest ? ATTN_OK
           : s->errors
               ? ATTN_ERR_COMPILE
               : attn_session_fail(s, ATTN_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (st == ATTN_OK) {
      char p[1024];
      snprintf(p, sizeof p, "lower-tile-to-cpu,%s", attn_cpu_to_llvm_pipeline);
      st = run_pipeline(s, *module, p);
    }
    if (st == ATTN_OK)
      mlirOperationSetAttributeByName(
          *module, mlirStringRefCreateFromCString(MANIFEST_ATTR),
          mlirStringAttrGet(s->ctx, mlirStringRefCreateFromCString(*manifest)));
  } else if (attn_attr_str(*module, MANIFEST_ATTR, &carried)) {
    *manifest = malloc(carried.length + 1);
    if (*manifest) {
      memcpy(*manifest, carried.data, carried.length);
      (*manifest)[carried.length] = '\0';
    }
    st = *manifest ? ATTN_OK
                   : attn_session_fail(s, ATTN_ERR_OUT_OF_MEMORY,
                                       "out of memory");
  } else {
    st = attn_session_fail(s, ATTN_ERR_COMPILE,
                           "nothing to compile: the input has no attn ops, "
                           "linalg.matmul or tile kernels");
  }
  if (st != ATTN_OK) {
    free(*manifest);
    *manifest = NULL;
    mlirOperationDestroy(*module);
    *module = (MlirOperation){NULL};
  }
  return st;
}

/// Prints the LLVM-dialect module, or translates it to LLVM IR, into r.
static enum attn_status emit_cpu(struct attn_session *s, MlirOperation module,
                                 struct attn_result *r) {
  if (s->format == ATTN_OUTPUT_LLVM_MLIR) {
    struct attn_strbuf b = {0};
    mlirOperationPrint(module, attn_strbuf_append, &b);
    if (b.failed || !b.buf) {
      attn_strbuf_free(&b);
      return attn_session_fail(s, ATTN_ERR_OUT_OF_MEMORY, "out of memory");
    }
    r->data = b.buf;
    r->size = b.len;
    return ATTN_OK;
  }
  LLVMContextRef lctx = LLVMContextCreate();
  LLVMModuleRef lm = mlirTranslateModuleToLLVMIR(module, lctx);
  enum attn_status st = ATTN_OK;
  if (!lm) {
    st = s->errors ? ATTN_ERR_COMPILE
                   : attn_session_fail(s, ATTN_ERR_COMPILE,
                                       "cannot translate the module to LLVM IR");
  } else {
    char *ir = LLVMPrintModuleToString(lm);
    r->size = strlen(ir);
    r->data = malloc(r->size + 1);
    if (r->data)
      memcpy(r->data, ir, r->size + 1);
    else
      st = attn_session_fail(s, ATTN_ERR_OUT_OF_MEMORY, "out of memory");
    LLVMDisposeMessage(ir);
    LLVMDisposeModule(lm);
  }
  LLVMContextDispose(lctx);
  return st;
}

//===-- attn_compile ------------------------------------------------------===//

static enum attn_status compile_gpu(struct attn_session *s, const char *text,
                                    size_t len, struct attn_result *r) {
  MlirOperation module;
  enum attn_status st = parse_module(s, text, len, &module);
  if (st != ATTN_OK)
    return st;
  st = lower_gpu(s, module);
  struct attn_binary bin = {0};
  if (st == ATTN_OK) {
    if (attn_target_emit(module,
                         s->format == ATTN_OUTPUT_CUBIN ? ATTN_FORMAT_CUBIN
                                                        : ATTN_FORMAT_PTX,
                         s->toolkit, &bin)) {
      r->data = bin.data;
      r->size = bin.size;
      r->manifest = bin.manifest;
    } else {
      st = s->errors ? ATTN_ERR_COMPILE
                     : attn_session_fail(s, ATTN_ERR_COMPILE,
                                         "GPU code generation failed");
    }
  }
  mlirOperationDestroy(module);
  return st;
}

ATTN_API enum attn_status attn_compile(const char *ir, size_t len,
                                       const struct attn_compile_options *opts,
                                       attn_diag_fn diag, void *user,
                                       attn_result **out) {
  struct attn_session s;
  if (out)
    *out = NULL;
  if (!ir || !out) {
    memset(&s, 0, sizeof s);
    s.diag = diag;
    s.user = user;
    return attn_session_fail(&s, ATTN_ERR_INVALID_ARGUMENT,
                             "attn_compile: %s is NULL", ir ? "out" : "ir");
  }
  if (len == 0)
    len = strlen(ir);
  enum attn_status st = attn_session_begin(&s, opts, diag, user);
  struct attn_result *r = NULL;
  if (st == ATTN_OK) {
    r = calloc(1, sizeof *r);
    if (!r)
      st = attn_session_fail(&s, ATTN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  if (st == ATTN_OK) {
    r->format = s.format;
    if (s.cpu) {
      MlirOperation module;
      st = attn_session_lower_cpu(&s, ir, len, &module, &r->manifest);
      if (st == ATTN_OK) {
        st = emit_cpu(&s, module, r);
        mlirOperationDestroy(module);
      }
    } else {
      st = compile_gpu(&s, ir, len, r);
    }
  }
  attn_session_end(&s);
  if (st != ATTN_OK) {
    attn_result_destroy(r);
    return st;
  }
  *out = r;
  return ATTN_OK;
}

ATTN_API const void *attn_result_data(const attn_result *r, size_t *size) {
  if (size)
    *size = r ? r->size : 0;
  return r ? r->data : NULL;
}

ATTN_API const char *attn_result_manifest(const attn_result *r) {
  return r ? r->manifest : NULL;
}

ATTN_API enum attn_output_format attn_result_format(const attn_result *r) {
  return r ? r->format : ATTN_OUTPUT_DEFAULT;
}

ATTN_API void attn_result_destroy(attn_result *r) {
  if (!r)
    return;
  free(r->data);
  free(r->manifest);
  free(r);
}
