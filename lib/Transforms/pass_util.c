//===- pass_util.c - Turns rows of attn_passes[] into MLIR external passes -===//
#include "lib/Transforms/transforms.h"

#include "mlir-c/Dialect/Arith.h"
#include "mlir-c/Dialect/Func.h"
#include "mlir-c/Dialect/GPU.h"
#include "mlir-c/Dialect/LLVM.h"
#include "mlir-c/Dialect/Math.h"
#include "mlir-c/Dialect/MemRef.h"
#include "mlir-c/Dialect/NVVM.h"
#include "mlir-c/Dialect/SCF.h"
#include "mlir-c/Support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PASSES 32

/// One TypeID per pass row; addresses live as long as the process.
static _Alignas(8) char pass_ids[MAX_PASSES][8];

/// A pass instance: its row and a private copy of its parsed options.
struct pass_instance {
  const struct attn_pass_def *def;
  char opts[];
};

static struct pass_instance *instance_new(const struct attn_pass_def *def) {
  struct pass_instance *p = calloc(1, sizeof *p + def->options_size);
  if (p)
    p->def = def;
  return p;
}

static void pass_construct(void *user) {}

static void pass_destruct(void *user) { free(user); }

static MlirLogicalResult pass_initialize(MlirContext ctx, void *user) {
  return mlirLogicalResultSuccess();
}

static void *pass_clone(void *user) {
  const struct pass_instance *src = user;
  struct pass_instance *p = instance_new(src->def);
  if (p)
    memcpy(p->opts, src->opts, src->def->options_size);
  return p;
}

static void pass_run(MlirOperation op, MlirExternalPass pass, void *user) {
  const struct pass_instance *p = user;
  if (!p || !p->def->run(op, p->opts))
    mlirExternalPassSignalFailure(pass);
}

const struct attn_pass_def *attn_pass_lookup(const char *name, size_t len) {
  for (size_t i = 0; i < attn_num_passes; ++i) {
    const struct attn_pass_def *d = attn_passes[i];
    if ((strlen(d->argument) == len && !strncmp(d->argument, name, len)) ||
        (d->alias && strlen(d->alias) == len && !strncmp(d->alias, name, len)))
      return d;
  }
  return NULL;
}

bool attn_pass_parse_options(const struct attn_pass_def *def, void *opts,
                             const char *text, char *err, size_t errlen) {
  const char *s = text;
  while (s && *s) {
    while (*s == ' ' || *s == ',')
      ++s;
    if (!*s)
      break;
    const char *eq = s;
    while (*eq && *eq != '=' && *eq != ' ')
      ++eq;
    if (*eq != '=') {
      snprintf(err, errlen, "option '%.*s' of pass '%s' needs a value (name=value)",
               (int)(eq - s), s, def->argument);
      return false;
    }
    const char *val = eq + 1, *end = val;
    while (*end && *end != ' ' && *end != ',')
      ++end;
    char name[64], value[256];
    snprintf(name, sizeof name, "%.*s", (int)(eq - s), s);
    snprintf(value, sizeof value, "%.*s", (int)(end - val), val);
    if (!def->set_option || !def->set_option(opts, name, value, err, errlen)) {
      if (!def->set_option)
        snprintf(err, errlen, "pass '%s' takes no options", def->argument);
      return false;
    }
    s = end;
  }
  return true;
}

MlirPass attn_pass_create(const struct attn_pass_def *def, const char *options,
                          char *err, size_t errlen) {
  MlirPass null = {NULL};
  size_t index = 0;
  while (index < attn_num_passes && attn_passes[index] != def)
    ++index;
  struct pass_instance *p = instance_new(def);
  if (!p || index >= MAX_PASSES) {
    snprintf(err, errlen, "cannot create pass '%s'", def->argument);
    free(p);
    return null;
  }
  if (def->init_options)
    def->init_options(p->opts);
  if (!attn_pass_parse_options(def, p->opts, options, err, errlen)) {
    free(p);
    return null;
  }
  MlirDialectHandle deps[] = {
      mlirGetDialectHandle__func__(),  mlirGetDialectHandle__arith__(),
      mlirGetDialectHandle__scf__(),   mlirGetDialectHandle__memref__(),
      mlirGetDialectHandle__math__(),  mlirGetDialectHandle__gpu__(),
      mlirGetDialectHandle__llvm__(),  mlirGetDialectHandle__nvvm__(),
  };
  MlirExternalPassCallbacks cbs = {pass_construct, pass_destruct,
                                   pass_initialize, pass_clone, pass_run};
  return mlirCreateExternalPass(
      mlirTypeIDCreate(pass_ids[index]),
      mlirStringRefCreateFromCString(def->argument),
      mlirStringRefCreateFromCString(def->argument),
      mlirStringRefCreateFromCString(def->description),
      mlirStringRefCreateFromCString("builtin.module"),
      (intptr_t)(sizeof deps / sizeof deps[0]), deps, cbs, p);
}
