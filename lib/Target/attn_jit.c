//===- attn_jit.c - CPU kernels JIT-compiled by MLIR's ExecutionEngine ----===//
//
// MLIR's C API drops the JIT's error (lookups return NULL) and ORC prints it
// to stderr itself ("JIT session error: Symbols not found: [ ... ]"), so
// compilation runs with stderr captured, and what it printed becomes the
// kernel's diagnostic. ORC compiles a whole module on its first lookup: one
// kernel calling a symbol nothing defines fails every kernel of the module.
// When a lookup fails, every kernel is compiled again in a module of its own,
// so that only the bad ones fail.
//
//===----------------------------------------------------------------------===//
#include "lib/Target/attn_jit.h"

#include "dialects/dialects.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/ExecutionEngine.h"
#include "mlir-c/Pass.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct jit_entry {
  char *name;
  attn_jit_entry_fn fn;
};

struct attn_jit {
  size_t nengines;
  MlirExecutionEngine *engines;
  size_t nentries;
  struct jit_entry *entries;
};

//===-- Conversion routines -----------------------------------------------===//

static uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static float bits_f32(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

uint16_t attn_jit_f32_to_bf16(float x) {
  uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x40); // NaN: keep the sign, make it quiet
  u += 0x7fffu + ((u >> 16) & 1);        // round to nearest even
  return (uint16_t)(u >> 16);
}

uint16_t attn_jit_f32_to_f16(float x) {
  uint32_t u = f32_bits(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN: quiet, the top mantissa bits kept
    return sign | 0x7e00 | (uint16_t)((a >> 13) & 0x3ff);
  if (a >= 0x477ff000u) // rounds to 65536 or more, or infinite
    return sign | 0x7c00;
  if (a < 0x38800000u) {          // below 2^-14: an f16 subnormal or zero
    if (a < 0x33000000u)          // at most 2^-25: rounds to zero
      return sign;
    uint32_t e = a >> 23;         // 102 to 112
    uint32_t m = (a & 0x7fffff) | 0x800000;
    uint32_t shift = 126 - e;     // the f16 unit is 2^-24: m * 2^(e-150)
    uint32_t q = m >> shift;
    uint32_t rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1)))
      ++q;
    return sign | (uint16_t)q;
  }
  // Normal: rebias the exponent, round the 13 dropped bits to nearest even;
  // a carry out of the mantissa moves into the exponent, as it should.
  uint32_t r = a - 0x38000000u;
  r += 0xfffu + ((r >> 13) & 1);
  return sign | (uint16_t)(r >> 13);
}

float attn_jit_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0x1f)
    return bits_f32(sign | 0x7f800000u | (m << 13));
  if (e != 0)
    return bits_f32(sign | ((e + 112) << 23) | (m << 13));
  if (m == 0)
    return bits_f32(sign);
  int shift = 0; // subnormal: normalise the mantissa
  while (!(m & 0x400)) {
    m <<= 1;
    ++shift;
  }
  return bits_f32(sign | ((uint32_t)(113 - shift) << 23) | ((m & 0x3ff) << 13));
}

// LLVM passes and returns half and bfloat in the low 16 bits of a float
// register (xmm0 on x86-64, as GCC's _Float16): a float whose low bits hold
// the value has that calling convention in C.
static float put16(uint16_t v) { return bits_f32(v); }
static uint16_t get16(float x) { return (uint16_t)f32_bits(x); }

static float jit_truncsfhf2(float x) { return put16(attn_jit_f32_to_f16(x)); }
static float jit_extendhfsf2(float h) { return attn_jit_f16_to_f32(get16(h)); }
static float jit_truncsfbf2(float x) { return put16(attn_jit_f32_to_bf16(x)); }

static void register_conversions(MlirExecutionEngine e) {
  float (*const fns[])(float) = {jit_truncsfhf2, jit_extendhfsf2,
                                 jit_truncsfbf2};
  const char *const names[] = {"__truncsfhf2", "__extendhfsf2",
                               "__truncsfbf2"};
  for (size_t i = 0; i < sizeof fns / sizeof *fns; ++i) {
    void *sym;
    memcpy(&sym, &fns[i], sizeof sym); // POSIX: code and data pointers agree
    mlirExecutionEngineRegisterSymbol(e, mlirStringRefCreateFromCString(names[i]),
                                      sym);
  }
}

//===-- What ORC prints ---------------------------------------------------===//

// stderr belongs to the process: one capture at a time.
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;

struct capture {
  FILE *file; // where fd 2 points meanwhile (NULL: nothing captured)
  int saved;  // the real stderr
};

static void capture_begin(struct capture *c) {
  pthread_mutex_lock(&capture_lock);
  fflush(stderr);
  c->saved = -1;
  c->file = tmpfile();
  if (c->file && (c->saved = dup(2)) >= 0 && dup2(fileno(c->file), 2) >= 0)
    return;
  if (c->saved >= 0)
    close(c->saved);
  if (c->file)
    fclose(c->file);
  c->file = NULL;
}

/// Restores stderr and returns what was printed meanwhile, its lines joined
/// by "; " (caller frees; NULL when nothing). With keep false the text goes
/// on to the real stderr instead (another thread's output, say).
static char *capture_end(struct capture *c, bool keep) {
  char *text = NULL;
  if (c->file) {
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    long n = ftell(c->file);
    if (n > 0 && (text = malloc((size_t)n + 1))) {
      rewind(c->file);
      size_t got = fread(text, 1, (size_t)n, c->file);
      text[got] = '\0';
      if (!keep) {
        fputs(text, stderr);
        free(text);
        text = NULL;
      }
    }
    fclose(c->file);
  }
  pthread_mutex_unlock(&capture_lock);
  if (!text)
    return NULL;
  size_t len = strlen(text);
  while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
    text[--len] = '\0';
  char *joined = len ? malloc(2 * len + 1) : NULL;
  if (joined) { // one line for a diagnostic
    char *w = joined;
    for (const char *r = text; *r; ++r)
      if (*r == '\n') {
        *w++ = ';';
        *w++ = ' ';
      } else {
        *w++ = *r;
      }
    *w = '\0';
  }
  free(text);
  return joined;
}

//===-- Module surgery ----------------------------------------------------===//

static bool is_llvm_func(MlirOperation op) {
  MlirIdentifier n = mlirOperationGetName(op);
  MlirStringRef s = mlirIdentifierStr(n);
  return s.length == 9 && !memcmp(s.data, "llvm.func", 9);
}

static MlirStringRef func_name(MlirOperation f) {
  MlirAttribute a = mlirOperationGetAttributeByName(
      f, mlirStringRefCreateFromCString("sym_name"));
  return mlirAttributeIsNull(a) ? (MlirStringRef){NULL, 0}
                                : mlirStringAttrGetValue(a);
}

/// A public function with a body: a kernel's entry.
static bool is_entry(MlirOperation f) {
  if (!is_llvm_func(f) ||
      mlirRegionIsNull(mlirOperationGetRegion(f, 0)) ||
      mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0))))
    return false;
  MlirAttribute vis = mlirOperationGetAttributeByName(
      f, mlirStringRefCreateFromCString("sym_visibility"));
  return mlirAttributeIsNull(vis) ||
         !mlirStringRefEqual(mlirStringAttrGetValue(vis),
                             mlirStringRefCreateFromCString("private"));
}

static MlirBlock module_body(MlirOperation module) {
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
}

/// The first kernel entry of module (null when none).
static MlirOperation first_entry(MlirOperation module) {
  for (MlirOperation op = mlirBlockGetFirstOperation(module_body(module));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (is_entry(op))
      return op;
  return (MlirOperation){NULL};
}

/// The host's conversion instructions off, in every function of module.
static void make_portable(MlirOperation module) {
#if defined(__x86_64__)
  MlirContext ctx = mlirOperationGetContext(module);
  MlirAttribute features = mlirAttributeParseGet(
      ctx, mlirStringRefCreateFromCString(
               "#llvm.target_features<[\"-avx512bf16\", \"-avxneconvert\", "
               "\"-avx512fp16\", \"-f16c\"]>"));
  if (mlirAttributeIsNull(features))
    return;
  for (MlirOperation op = mlirBlockGetFirstOperation(module_body(module));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (is_llvm_func(op))
      mlirOperationSetAttributeByName(
          op, mlirStringRefCreateFromCString("target_features"), features);
#else
  (void)module; // the conversions are x86-64's question
#endif
}

/// A copy of module holding only entry's kernel (every other function
/// private, then what entry does not call removed). Null on failure.
static MlirOperation module_of_one(MlirOperation module, MlirStringRef entry) {
  MlirOperation copy = mlirOperationClone(module);
  MlirContext ctx = mlirOperationGetContext(module);
  MlirAttribute priv =
      mlirStringAttrGet(ctx, mlirStringRefCreateFromCString("private"));
  for (MlirOperation op = mlirBlockGetFirstOperation(module_body(copy));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (is_entry(op) && !mlirStringRefEqual(func_name(op), entry))
      mlirOperationSetAttributeByName(
          op, mlirStringRefCreateFromCString("sym_visibility"), priv);
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  MlirLogicalResult ok = mlirOpPassManagerAddPipeline(
      opm, mlirStringRefCreateFromCString("symbol-dce"), NULL, NULL);
  if (mlirLogicalResultIsSuccess(ok))
    ok = mlirPassManagerRunOnOp(pm, copy);
  mlirPassManagerDestroy(pm);
  if (mlirLogicalResultIsFailure(ok)) {
    mlirOperationDestroy(copy);
    return (MlirOperation){NULL};
  }
  return copy;
}

//===-- Compiling ---------------------------------------------------------===//

static bool add_engine(struct attn_jit *jit, MlirExecutionEngine e) {
  MlirExecutionEngine *grown =
      realloc(jit->engines, (jit->nengines + 1) * sizeof *grown);
  if (!grown)
    return false;
  jit->engines = grown;
  jit->engines[jit->nengines++] = e;
  return true;
}

/// Creates an engine for module, registers the conversions and looks up
/// entries [first, last) of jit that are still unresolved. *error gets what
/// the JIT printed when something failed (caller frees). Returns the engine
/// (null when the module was rejected), which jit then owns.
static MlirExecutionEngine compile(struct attn_jit *jit, MlirOperation module,
                                   size_t first, size_t last,
                                   const char *object, char **error) {
  struct capture c;
  capture_begin(&c);
  MlirExecutionEngine e = mlirExecutionEngineCreate(
      mlirModuleFromOperation(module), 2, 0, NULL, object != NULL, false);
  bool failed = mlirExecutionEngineIsNull(e);
  if (!failed) {
    register_conversions(e);
    for (size_t i = first; i < last; ++i) {
      if (jit->entries[i].fn)
        continue;
      void *sym = mlirExecutionEngineLookupPacked(
          e, mlirStringRefCreateFromCString(jit->entries[i].name));
      memcpy(&jit->entries[i].fn, &sym, sizeof sym);
      failed |= !sym;
    }
    if (object && !failed)
      mlirExecutionEngineDumpToObjectFile(
          e, mlirStringRefCreateFromCString(object));
  }
  *error = capture_end(&c, failed);
  if (!mlirExecutionEngineIsNull(e) && !add_engine(jit, e)) {
    mlirExecutionEngineDestroy(e);
    for (size_t i = first; i < last; ++i)
      jit->entries[i].fn = NULL;
    return (MlirExecutionEngine){NULL};
  }
  return e;
}

static void report(MlirOperation at, const char *what, const char *name,
                   const char *error) {
  attn_emit_errorf(at, "%s '%s' for this CPU%s%s", what, name,
                   error ? ": " : "", error ? error : "");
}

struct attn_jit *attn_jit_create(MlirOperation module) {
  struct attn_jit *jit = calloc(1, sizeof *jit);
  if (!jit) {
    attn_emit_errorf(module, "out of memory");
    return NULL;
  }
  const char *portable = getenv(ATTN_CPU_PORTABLE_ENV);
  if (portable && *portable && strcmp(portable, "0"))
    make_portable(module);
  size_t n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(module_body(module));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    n += is_entry(op);
  jit->entries = calloc(n ? n : 1, sizeof *jit->entries);
  bool oom = !jit->entries;
  for (MlirOperation op = mlirBlockGetFirstOperation(module_body(module));
       !oom && !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (!is_entry(op))
      continue;
    MlirStringRef s = func_name(op);
    char *name = malloc(s.length + 1);
    if (!(oom = !name)) {
      memcpy(name, s.data, s.length);
      name[s.length] = '\0';
      jit->entries[jit->nentries++].name = name;
    }
  }
  if (oom) {
    attn_emit_errorf(module, "out of memory");
    attn_jit_destroy(jit);
    return NULL;
  }
  if (!jit->nentries) {
    attn_emit_errorf(module, "the module has no kernel to JIT-compile");
    attn_jit_destroy(jit);
    return NULL;
  }
  const char *object = getenv(ATTN_JIT_OBJECT_ENV);
  char *error = NULL;
  MlirExecutionEngine whole =
      compile(jit, module, 0, jit->nentries, object && *object ? object : NULL,
              &error);
  size_t ok = 0;
  for (size_t i = 0; i < jit->nentries; ++i)
    ok += jit->entries[i].fn != NULL;
  if (mlirExecutionEngineIsNull(whole) && jit->nentries == 1)
    report(first_entry(module), "the ExecutionEngine rejected kernel",
           jit->entries[0].name,
           error);
  if (ok < jit->nentries && jit->nentries > 1) {
    // One at a time: each bad kernel fails with its own message.
    free(error);
    error = NULL;
    size_t i = 0;
    for (MlirOperation op = mlirBlockGetFirstOperation(module_body(module));
         !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
      if (!is_entry(op) || jit->entries[i++].fn)
        continue;
      MlirOperation one = module_of_one(module, func_name(op));
      char *why = NULL;
      if (!mlirOperationIsNull(one)) {
        compile(jit, one, i - 1, i, NULL, &why);
        mlirOperationDestroy(one);
      }
      if (jit->entries[i - 1].fn)
        ++ok;
      else
        report(op, "cannot JIT-compile kernel", jit->entries[i - 1].name, why);
      free(why);
    }
  } else if (ok < jit->nentries && !mlirExecutionEngineIsNull(whole)) {
    report(first_entry(module), "cannot JIT-compile kernel",
           jit->entries[0].name, error);
  }
  free(error);
  if (!ok) {
    attn_jit_destroy(jit);
    return NULL;
  }
  return jit;
}

attn_jit_entry_fn attn_jit_lookup(const struct attn_jit *jit,
                                  const char *name) {
  for (size_t i = 0; jit && name && i < jit->nentries; ++i)
    if (!strcmp(jit->entries[i].name, name))
      return jit->entries[i].fn;
  return NULL;
}

void attn_jit_destroy(struct attn_jit *jit) {
  if (!jit)
    return;
  for (size_t i = 0; i < jit->nengines; ++i)
    mlirExecutionEngineDestroy(jit->engines[i]);
  for (size_t i = 0; i < jit->nentries; ++i)
    free(jit->entries[i].name);
  free(jit->engines);
  free(jit->entries);
  free(jit);
}
