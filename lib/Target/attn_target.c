//===- attn_target.c - gpu.module to PTX/cubin, and the launch manifest ---===//
#include "lib/Target/attn_target.h"

#include "dialects/dialects.h"
#include "lib/IR/attn_context.h"
#include "lib/Transforms/transforms.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/GPU.h"
#include "mlir-c/Pass.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool has_libdevice(const char *dir) {
  char path[1024];
  struct stat st;
  snprintf(path, sizeof path, "%s/nvvm/libdevice", dir);
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *attn_cuda_toolkit_find(void) {
  static const char *vars[] = {"CUDA_HOME", "CUDA_ROOT", "CUDA_PATH"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; ++i) {
    const char *v = getenv(vars[i]);
    if (v && *v && has_libdevice(v))
      return v;
  }
  return has_libdevice("/usr/local/cuda") ? "/usr/local/cuda" : NULL;
}

//===-- Manifest ----------------------------------------------------------===//

static const char *dtype_name(MlirType e) {
  if (mlirTypeIsAF32(e))
    return "f32";
  if (mlirTypeIsAF16(e))
    return "f16";
  if (mlirTypeIsABF16(e))
    return "bf16";
  if (mlirTypeIsAF64(e))
    return "f64";
  if (mlirTypeIsAInteger(e))
    return mlirIntegerTypeGetWidth(e) == 64 ? "i64" : "i32";
  return "unknown";
}

static int64_t type_bytes(MlirType t) {
  int64_t d[8], n = 1;
  int rank = attn_static_shape(t, d);
  if (rank < 0)
    return 0;
  for (int i = 0; i < rank; ++i)
    n *= d[i];
  MlirType e = mlirShapedTypeGetElementType(t);
  int bits = mlirTypeIsAF32(e) || mlirTypeIsAInteger(e) ? 32 : 16;
  if (mlirTypeIsAF64(e) || (mlirTypeIsAInteger(e) && mlirIntegerTypeGetWidth(e) == 64))
    bits = 64;
  return n * bits / 8;
}

static bool add_dims(MlirOperation func, const char *attr, cJSON *obj,
                     const char *key) {
  MlirAttribute a = mlirOperationGetAttributeByName(
      func, mlirStringRefCreateFromCString(attr));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsADenseI32Array(a) ||
      mlirDenseArrayGetNumElements(a) != 3)
    return attn_emit_errorf(func, "kernel has no '%s' = array<i32: x, y, z>",
                            attr);
  int v[3];
  for (int i = 0; i < 3; ++i)
    v[i] = mlirDenseI32ArrayGetElement(a, i);
  cJSON_AddItemToObject(obj, key, cJSON_CreateIntArray(v, 3));
  return true;
}

cJSON *attn_manifest_param(MlirOperation func, const char *names_attr,
                           MlirType t, intptr_t i) {
  cJSON *p = cJSON_CreateObject();
  MlirAttribute names = mlirOperationGetAttributeByName(
      func, mlirStringRefCreateFromCString(names_attr));
  char name[64];
  snprintf(name, sizeof name, "arg%ld", (long)i);
  if (!mlirAttributeIsNull(names) && mlirAttributeIsAArray(names) &&
      i < mlirArrayAttrGetNumElements(names)) {
    MlirAttribute n = mlirArrayAttrGetElement(names, i);
    if (mlirAttributeIsAString(n)) {
      MlirStringRef s = mlirStringAttrGetValue(n);
      snprintf(name, sizeof name, "%.*s", (int)s.length, s.data);
    }
  }
  cJSON_AddStringToObject(p, "name", name);
  if (mlirTypeIsAMemRef(t)) {
    int64_t d[8];
    int rank = attn_static_shape(t, d);
    cJSON_AddStringToObject(p, "kind", "ptr");
    cJSON_AddStringToObject(p, "dtype",
                            dtype_name(mlirShapedTypeGetElementType(t)));
    cJSON *shape = cJSON_AddArrayToObject(p, "shape");
    for (int r = 0; r < rank; ++r)
      cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)d[r]));
  } else {
    bool wide = mlirTypeIsAIndex(t) ||
                (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 64);
    cJSON_AddStringToObject(p, "kind",
                            mlirTypeIsAF32(t) ? "f32" : wide ? "i64" : "i32");
  }
  return p;
}

/// An attribute as JSON: dictionaries, arrays (also dense i32/i64 arrays),
/// strings, booleans, integers and floats. NULL for anything else.
static cJSON *attr_json(MlirAttribute a) {
  if (mlirAttributeIsADictionary(a)) {
    cJSON *o = cJSON_CreateObject();
    for (intptr_t i = 0, n = mlirDictionaryAttrGetNumElements(a); i < n; ++i) {
      MlirNamedAttribute e = mlirDictionaryAttrGetElement(a, i);
      MlirStringRef k = mlirIdentifierStr(e.name);
      char key[128];
      snprintf(key, sizeof key, "%.*s", (int)k.length, k.data);
      cJSON *v = attr_json(e.attribute);
      if (v)
        cJSON_AddItemToObject(o, key, v);
    }
    return o;
  }
  if (mlirAttributeIsAArray(a)) {
    cJSON *arr = cJSON_CreateArray();
    for (intptr_t i = 0, n = mlirArrayAttrGetNumElements(a); i < n; ++i) {
      cJSON *v = attr_json(mlirArrayAttrGetElement(a, i));
      if (v)
        cJSON_AddItemToArray(arr, v);
    }
    return arr;
  }
  if (mlirAttributeIsADenseI32Array(a) || mlirAttributeIsADenseI64Array(a)) {
    cJSON *arr = cJSON_CreateArray();
    bool wide = mlirAttributeIsADenseI64Array(a);
    for (intptr_t i = 0, n = mlirDenseArrayGetNumElements(a); i < n; ++i)
      cJSON_AddItemToArray(
          arr, cJSON_CreateNumber(wide ? (double)mlirDenseI64ArrayGetElement(a, i)
                                       : mlirDenseI32ArrayGetElement(a, i)));
    return arr;
  }
  if (mlirAttributeIsAString(a)) {
    MlirStringRef s = mlirStringAttrGetValue(a);
    char *buf = strndup(s.data, s.length);
    cJSON *v = buf ? cJSON_CreateString(buf) : NULL;
    free(buf);
    return v;
  }
  if (mlirAttributeIsABool(a))
    return cJSON_CreateBool(mlirBoolAttrGetValue(a));
  if (mlirAttributeIsAInteger(a))
    return cJSON_CreateNumber((double)mlirIntegerAttrGetValueInt(a));
  if (mlirAttributeIsAFloat(a))
    return cJSON_CreateNumber(mlirFloatAttrGetValueDouble(a));
  return NULL;
}

/// Copies attn.attention (what the kernel computes: scale, causal, window,
/// alibi, softcap, gate_block, document, mods, rope) and attn.matmul (m, n,
/// k, blocks, accumulate) into the kernel's entry, so a launcher or checker
/// knows what the kernel computes.
void attn_manifest_describe(MlirOperation func, const char *prefix,
                            cJSON *k) {
  static const char *const keys[2] = {"attention", "matmul"};
  for (int i = 0; i < 2; ++i) {
    char name[64];
    snprintf(name, sizeof name, "%s.%s", prefix, keys[i]);
    MlirAttribute a = mlirOperationGetAttributeByName(
        func, mlirStringRefCreateFromCString(name));
    if (mlirAttributeIsNull(a) || !mlirAttributeIsADictionary(a))
      continue;
    cJSON *v = attr_json(a);
    if (v)
      cJSON_AddItemToObject(k, keys[i], v);
  }
}

/// The manifest entry of an llvm.func kernel that states its own launch
/// (attn.launch = {grid, block, static_shared_bytes, dynamic_shared_bytes,
/// params, attention}): its name, then that dictionary as JSON.
static cJSON *launch_json(MlirOperation func) {
  MlirStringRef sym;
  attn_attr_str(func, "sym_name", &sym);
  MlirAttribute launch = mlirOperationGetAttributeByName(
      func, mlirStringRefCreateFromCString(ATTN_LAUNCH_ATTR));
  if (!mlirAttributeIsADictionary(launch)) {
    attn_emit_errorf(func, "'%s' must be a dictionary", ATTN_LAUNCH_ATTR);
    return NULL;
  }
  cJSON *k = cJSON_CreateObject();
  char *name = strndup(sym.data, sym.length);
  cJSON_AddStringToObject(k, "name", name ? name : "");
  free(name);
  cJSON *rest = attr_json(launch);
  cJSON *item = rest ? rest->child : NULL;
  while (item) {
    cJSON *next = item->next;
    cJSON_AddItemToObject(k, item->string,
                          cJSON_DetachItemViaPointer(rest, item));
    item = next;
  }
  cJSON_Delete(rest);
  return k;
}

static cJSON *kernel_json(MlirOperation func) {
  MlirStringRef sym;
  attn_attr_str(func, "sym_name", &sym);
  cJSON *k = cJSON_CreateObject();
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)sym.length, sym.data);
  cJSON_AddStringToObject(k, "name", name);
  if (!add_dims(func, "known_grid_size", k, "grid") ||
      !add_dims(func, "known_block_size", k, "block")) {
    cJSON_Delete(k);
    return NULL;
  }
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  MlirType fty = mlirTypeAttrGetValue(mlirOperationGetAttributeByName(
      func, mlirStringRefCreateFromCString("function_type")));
  intptr_t nin = mlirFunctionTypeGetNumInputs(fty);
  int64_t smem = 0;
  for (intptr_t i = nin, n = mlirBlockGetNumArguments(body); i < n; ++i)
    smem += type_bytes(mlirValueGetType(mlirBlockGetArgument(body, i)));
  cJSON_AddNumberToObject(k, "static_shared_bytes", (double)smem);
  cJSON_AddNumberToObject(k, "dynamic_shared_bytes", 0);
  attn_manifest_describe(func, "attn", k);
  cJSON *params = cJSON_AddArrayToObject(k, "params");
  for (intptr_t i = 0; i < nin; ++i)
    cJSON_AddItemToArray(params,
                         attn_manifest_param(func, "attn.arg_names",
                                             mlirFunctionTypeGetInput(fty, i), i));
  return k;
}

void attn_manifest_add_programs(cJSON *root, MlirAttribute programs) {
  if (mlirAttributeIsNull(programs) || !mlirAttributeIsAArray(programs))
    return;
  cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "programs");
  if (!arr)
    arr = cJSON_AddArrayToObject(root, "programs");
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(programs); ++i) {
    cJSON *one = attr_json(mlirArrayAttrGetElement(programs, i));
    if (one)
      cJSON_AddItemToArray(arr, one);
  }
}

static void target_chip(MlirOperation module, char *chip, size_t len);

char *attn_manifest_create(MlirOperation module, const char *chip,
                           enum attn_binary_format format) {
  char from_module[32];
  if (!chip) {
    target_chip(module, from_module, sizeof from_module);
    chip = from_module;
  }
  struct attn_op_list_local {
    MlirOperation ops[64];
    int n;
  } kernels = {.n = 0};
  // Kernels are gpu.func ops marked "gpu.kernel" inside gpu.module ops.
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation gm = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(gm); gm = mlirOperationGetNextInBlock(gm)) {
    if (!attn_op_is(gm, "gpu.module"))
      continue;
    MlirBlock gb = mlirRegionGetFirstBlock(mlirOperationGetRegion(gm, 0));
    for (MlirOperation f = mlirBlockGetFirstOperation(gb);
         !mlirOperationIsNull(f); f = mlirOperationGetNextInBlock(f))
      if (((attn_op_is(f, "gpu.func") &&
            !mlirAttributeIsNull(mlirOperationGetAttributeByName(
                f, mlirStringRefCreateFromCString("gpu.kernel")))) ||
           (attn_op_is(f, "llvm.func") &&
            !mlirAttributeIsNull(mlirOperationGetAttributeByName(
                f, mlirStringRefCreateFromCString(ATTN_LAUNCH_ATTR)))))) {
        if (kernels.n == 64) {
          attn_emit_errorf(f, "more than 64 kernels in one module");
          return NULL;
        }
        kernels.ops[kernels.n++] = f;
      }
  }
  if (kernels.n == 0) {
    attn_emit_errorf(module, "no GPU kernel in the module (run "
                             "lower-tile-to-gpu first)");
    return NULL;
  }
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON_AddStringToObject(root, "target", chip);
  cJSON_AddStringToObject(root, "format",
                          format == ATTN_FORMAT_PTX ? "ptx" : "cubin");
  // Programs of every gpu.module, in order.
  for (MlirOperation gm = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(gm); gm = mlirOperationGetNextInBlock(gm))
    if (attn_op_is(gm, "gpu.module"))
      attn_manifest_add_programs(
          root, mlirOperationGetAttributeByName(
                    gm, mlirStringRefCreateFromCString(ATTN_PROGRAMS_ATTR)));
  cJSON *arr = cJSON_AddArrayToObject(root, "kernels");
  for (int i = 0; i < kernels.n; ++i) {
    cJSON *k = attn_op_is(kernels.ops[i], "llvm.func")
                   ? launch_json(kernels.ops[i])
                   : kernel_json(kernels.ops[i]);
    if (!k) {
      cJSON_Delete(root);
      return NULL;
    }
    cJSON_AddItemToArray(arr, k);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  return text;
}

//===-- Emission ----------------------------------------------------------===//

/// Reads the chip of the first gpu.module's #nvvm.target.
static void target_chip(MlirOperation module, char *chip, size_t len) {
  snprintf(chip, len, "unknown");
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation gm = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(gm); gm = mlirOperationGetNextInBlock(gm)) {
    MlirAttribute targets = mlirOperationGetAttributeByName(
        gm, mlirStringRefCreateFromCString("targets"));
    if (!attn_op_is(gm, "gpu.module") || mlirAttributeIsNull(targets) ||
        mlirArrayAttrGetNumElements(targets) < 1)
      continue;
    struct attn_strbuf b = {0};
    attn_strbuf_attr(&b, mlirArrayAttrGetElement(targets, 0));
    const char *c = b.buf ? strstr(b.buf, "chip = \"") : NULL;
    if (c) {
      c += 8;
      size_t n = strcspn(c, "\"");
      snprintf(chip, len, "%.*s", (int)n, c);
    }
    attn_strbuf_free(&b);
    return;
  }
}

static bool extract_binary(MlirOperation module, struct attn_binary *out) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (!attn_op_is(op, "gpu.binary"))
      continue;
    MlirAttribute objs = mlirOperationGetAttributeByName(
        op, mlirStringRefCreateFromCString("objects"));
    if (mlirAttributeIsNull(objs) || mlirArrayAttrGetNumElements(objs) < 1 ||
        !mlirAttributeIsAGPUObjectAttr(mlirArrayAttrGetElement(objs, 0)))
      continue;
    MlirStringRef s =
        mlirGPUObjectAttrGetObject(mlirArrayAttrGetElement(objs, 0));
    out->data = malloc(s.length + 1);
    if (!out->data)
      return attn_emit_errorf(module, "out of memory");
    memcpy(out->data, s.data, s.length);
    out->data[s.length] = '\0';
    out->size = s.length;
    return true;
  }
  return attn_emit_errorf(module, "GPU compilation produced no gpu.binary");
}

bool attn_target_emit(MlirOperation module, enum attn_binary_format format,
                      const char *toolkit, struct attn_binary *out) {
  memset(out, 0, sizeof *out);
  out->format = format;
  if (toolkit && !has_libdevice(toolkit))
    return attn_emit_errorf(module,
                            "CUDA toolkit '%s' has no nvvm/libdevice folder",
                            toolkit);
  if (!toolkit)
    toolkit = attn_cuda_toolkit_find();
  if (!toolkit)
    return attn_emit_errorf(module,
                            "CUDA toolkit not found: set CUDA_HOME to a folder "
                            "holding nvvm/libdevice (and bin/ptxas for cubin)");
  char chip[32];
  target_chip(module, chip, sizeof chip);
  out->manifest = attn_manifest_create(module, chip, format);
  if (!out->manifest)
    return false;
  char pipeline[1024];
  snprintf(pipeline, sizeof pipeline,
           "gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-"
           "memref-call-conv=1},canonicalize,cse),reconcile-unrealized-casts,"
           "gpu-module-to-binary{format=%s toolkit=%s}",
           format == ATTN_FORMAT_PTX ? "isa" : "bin", toolkit);
  bool ok = attn_pipeline_run(module, pipeline) && extract_binary(module, out);
  if (!ok)
    attn_binary_free(out);
  return ok;
}

void attn_binary_free(struct attn_binary *b) {
  if (!b)
    return;
  free(b->data);
  free(b->manifest);
  memset(b, 0, sizeof *b);
}
