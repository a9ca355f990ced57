//===- launch_programs.c - The launch programs of a gpu.module ------------===//
//
// A launch program runs several kernels in order over its inputs and its
// own workspaces (attn.programs on the gpu.module: {name, inputs,
// workspace = [{name, bytes}], steps = [{kernel, args}]}), so that callers
// launch an attention with RoPE kernels before it, a split-K GEMM, or an
// attn.project layer by one name (attnrt_program_launch). lower-tile-to-
// hopper appends the programs it makes and moves attn-tile's (tile.programs
// on the module, which attn-tile appends to the same way) in, splicing
// inner programs into the outer ones.
//
//===----------------------------------------------------------------------===//
#include "lib/Target/attn_target.h"
#include "lib/Transforms/transforms_internal.h"

#include "mlir-c/BuiltinAttributes.h"

#include <stdio.h>

/// Parses t (an array of programs' text, freed here) and sets it as op's
/// attribute attr; false when it does not parse.
static bool set_programs(MlirOperation op, const char *attr,
                         struct attn_strbuf *t) {
  MlirAttribute a =
      t->failed ? (MlirAttribute){NULL}
                : mlirAttributeParseGet(mlirOperationGetContext(op),
                                        mlirStringRefCreateFromCString(t->buf));
  attn_strbuf_free(t);
  if (mlirAttributeIsNull(a))
    return false;
  mlirOperationSetAttributeByName(op, mlirStringRefCreateFromCString(attr), a);
  return true;
}

bool attn_programs_append(MlirOperation op, const char *attr,
                          struct attn_strbuf *program) {
  struct attn_strbuf t = {0};
  attn_strbuf_printf(&t, "[");
  MlirAttribute old =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(attr));
  if (!mlirAttributeIsNull(old) && mlirAttributeIsAArray(old))
    for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(old); ++i) {
      attn_strbuf_attr(&t, mlirArrayAttrGetElement(old, i));
      attn_strbuf_printf(&t, ", ");
    }
  attn_strbuf_printf(&t, "%s]", program->buf ? program->buf : "");
  if (program->failed)
    t.failed = true;
  attn_strbuf_free(program);
  return set_programs(op, attr, &t);
}

/// The program named name in programs (an array attribute), or null.
static MlirAttribute find_program(MlirAttribute programs, MlirStringRef name) {
  for (intptr_t i = 0; !mlirAttributeIsNull(programs) &&
                       i < mlirArrayAttrGetNumElements(programs);
       ++i) {
    MlirAttribute n =
        attn_dict_get(mlirArrayAttrGetElement(programs, i), "name");
    if (mlirAttributeIsAString(n) &&
        mlirStringRefEqual(mlirStringAttrGetValue(n), name))
      return mlirArrayAttrGetElement(programs, i);
  }
  return (MlirAttribute){NULL};
}

/// Writes `"<prefix><s>"` where s names an input of inner: the outer
/// step's argument bound to it; else (a workspace) s prefixed by the inner
/// program's name.
static void bound_name(struct attn_strbuf *t, MlirAttribute inner,
                       MlirAttribute step_args, MlirStringRef s) {
  MlirAttribute in = attn_dict_get(inner, "inputs");
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(in); ++i)
    if (mlirStringRefEqual(
            mlirStringAttrGetValue(mlirArrayAttrGetElement(in, i)), s)) {
      attn_strbuf_attr(t, mlirArrayAttrGetElement(step_args, i));
      return;
    }
  MlirStringRef p = mlirStringAttrGetValue(attn_dict_get(inner, "name"));
  attn_strbuf_printf(t, "\"%.*s.%.*s\"", (int)p.length, p.data,
                     (int)s.length, s.data);
}

/// Writes program p, each step whose kernel is a program in have replaced
/// by that program's steps (see attn_programs_move): one walk over the steps
/// collects the spliced workspaces and steps side by side.
static void splice_program(struct attn_strbuf *t, MlirAttribute p,
                           MlirAttribute have) {
  struct attn_strbuf ws = {0}, st = {0};
  MlirAttribute own = attn_dict_get(p, "workspace");
  for (intptr_t w = 0; w < mlirArrayAttrGetNumElements(own); ++w) {
    attn_strbuf_printf(&ws, "%s", w ? ", " : "");
    attn_strbuf_attr(&ws, mlirArrayAttrGetElement(own, w));
  }
  MlirAttribute steps = attn_dict_get(p, "steps");
  for (intptr_t s = 0; s < mlirArrayAttrGetNumElements(steps); ++s) {
    MlirAttribute step = mlirArrayAttrGetElement(steps, s);
    MlirAttribute inner = find_program(
        have, mlirStringAttrGetValue(attn_dict_get(step, "kernel")));
    if (mlirAttributeIsNull(inner)) {
      attn_strbuf_printf(&st, "%s", st.len ? ", " : "");
      attn_strbuf_attr(&st, step);
      continue;
    }
    MlirAttribute iws = attn_dict_get(inner, "workspace");
    for (intptr_t w = 0; w < mlirArrayAttrGetNumElements(iws); ++w) {
      MlirAttribute e = mlirArrayAttrGetElement(iws, w);
      attn_strbuf_printf(&ws, "%s{name = ", ws.len ? ", " : "");
      bound_name(&ws, inner, (MlirAttribute){NULL},
                 mlirStringAttrGetValue(attn_dict_get(e, "name")));
      attn_strbuf_printf(&ws, ", bytes = ");
      attn_strbuf_attr(&ws, attn_dict_get(e, "bytes"));
      attn_strbuf_printf(&ws, "}");
    }
    MlirAttribute isteps = attn_dict_get(inner, "steps");
    for (intptr_t j = 0; j < mlirArrayAttrGetNumElements(isteps); ++j) {
      MlirAttribute is = mlirArrayAttrGetElement(isteps, j);
      MlirAttribute args = attn_dict_get(is, "args");
      attn_strbuf_printf(&st, "%s{kernel = ", st.len ? ", " : "");
      attn_strbuf_attr(&st, attn_dict_get(is, "kernel"));
      attn_strbuf_printf(&st, ", args = [");
      for (intptr_t a = 0; a < mlirArrayAttrGetNumElements(args); ++a) {
        attn_strbuf_printf(&st, "%s", a ? ", " : "");
        bound_name(&st, inner, attn_dict_get(step, "args"),
                   mlirStringAttrGetValue(mlirArrayAttrGetElement(args, a)));
      }
      attn_strbuf_printf(&st, "]}");
    }
  }
  attn_strbuf_printf(t, "{name = ");
  attn_strbuf_attr(t, attn_dict_get(p, "name"));
  attn_strbuf_printf(t, ", inputs = ");
  attn_strbuf_attr(t, attn_dict_get(p, "inputs"));
  attn_strbuf_printf(t, ", workspace = [%s], steps = [%s]}",
                     ws.buf ? ws.buf : "", st.buf ? st.buf : "");
  if (ws.failed || st.failed)
    t->failed = true;
  attn_strbuf_free(&ws);
  attn_strbuf_free(&st);
}

/// Whether a is an array attribute of string attributes.
static bool is_strings(MlirAttribute a) {
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAArray(a))
    return false;
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(a); ++i)
    if (!mlirAttributeIsAString(mlirArrayAttrGetElement(a, i)))
      return false;
  return true;
}

static bool is_string(MlirAttribute a) {
  return !mlirAttributeIsNull(a) && mlirAttributeIsAString(a);
}

/// Whether p has the shape the splice reads: a dictionary with a string
/// name, inputs (strings), workspace (dictionaries with a string name and
/// bytes) and steps (dictionaries with a string kernel and args (strings)).
static bool is_program(MlirAttribute p) {
  if (mlirAttributeIsNull(p) || !mlirAttributeIsADictionary(p) ||
      !is_string(attn_dict_get(p, "name")) ||
      !is_strings(attn_dict_get(p, "inputs")))
    return false;
  MlirAttribute ws = attn_dict_get(p, "workspace");
  MlirAttribute steps = attn_dict_get(p, "steps");
  if (mlirAttributeIsNull(ws) || !mlirAttributeIsAArray(ws) ||
      mlirAttributeIsNull(steps) || !mlirAttributeIsAArray(steps))
    return false;
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(ws); ++i) {
    MlirAttribute w = mlirArrayAttrGetElement(ws, i);
    if (!mlirAttributeIsADictionary(w) || !is_string(attn_dict_get(w, "name")) ||
        mlirAttributeIsNull(attn_dict_get(w, "bytes")))
      return false;
  }
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(steps); ++i) {
    MlirAttribute st = mlirArrayAttrGetElement(steps, i);
    if (!mlirAttributeIsADictionary(st) ||
        !is_string(attn_dict_get(st, "kernel")) ||
        !is_strings(attn_dict_get(st, "args")))
      return false;
  }
  return true;
}

/// Whether every entry of programs (an array, or null) is a program, and
/// every step of outer (if not null) that runs one of have's programs gives
/// it one argument per input. Else an error on module.
static bool check_programs(MlirOperation module, MlirAttribute programs,
                           MlirAttribute have, const char *what) {
  for (intptr_t i = 0; !mlirAttributeIsNull(programs) &&
                       i < mlirArrayAttrGetNumElements(programs);
       ++i) {
    MlirAttribute p = mlirArrayAttrGetElement(programs, i);
    if (!is_program(p))
      return attn_emit_errorf(module,
                              "%s entry %ld is not a launch program (name, "
                              "inputs, workspace, steps of kernel and args)",
                              what, (long)i);
    MlirAttribute steps = attn_dict_get(p, "steps");
    for (intptr_t s = 0; !mlirAttributeIsNull(have) &&
                         s < mlirArrayAttrGetNumElements(steps);
         ++s) {
      MlirAttribute st = mlirArrayAttrGetElement(steps, s);
      MlirAttribute inner =
          find_program(have, mlirStringAttrGetValue(attn_dict_get(st, "kernel")));
      if (!mlirAttributeIsNull(inner) &&
          mlirArrayAttrGetNumElements(attn_dict_get(st, "args")) !=
              mlirArrayAttrGetNumElements(attn_dict_get(inner, "inputs")))
        return attn_emit_errorf(module,
                                "%s entry %ld: step %ld runs a program with "
                                "another number of inputs than it has args",
                                what, (long)i, (long)s);
    }
  }
  return true;
}

bool attn_programs_move(MlirOperation module) {
  MlirStringRef key = mlirStringRefCreateFromCString(ATTN_TILE_PROGRAMS_ATTR);
  MlirAttribute progs = mlirOperationGetAttributeByName(module, key);
  if (mlirAttributeIsNull(progs))
    return true;
  MlirOperation gm = attn_gpu_kernels_module(module, "sm_90a", 80,
                                             mlirOperationGetLocation(module));
  if (mlirOperationIsNull(gm) || !mlirAttributeIsAArray(progs))
    return attn_emit_errorf(module, "cannot record the launch programs");
  MlirStringRef gkey = mlirStringRefCreateFromCString(ATTN_PROGRAMS_ATTR);
  MlirAttribute have = mlirOperationGetAttributeByName(gm, gkey);
  if (!mlirAttributeIsNull(have) && !mlirAttributeIsAArray(have))
    return attn_emit_errorf(module, "%s is not an array of launch programs",
                            ATTN_PROGRAMS_ATTR);
  if (!check_programs(module, have, (MlirAttribute){NULL},
                      ATTN_PROGRAMS_ATTR) ||
      !check_programs(module, progs, have, ATTN_TILE_PROGRAMS_ATTR))
    return false;
  struct attn_strbuf t = {0};
  attn_strbuf_printf(&t, "[");
  bool first = true;
  // The outer programs, with inner programs' steps spliced in.
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(progs); ++i) {
    attn_strbuf_printf(&t, "%s", first ? "" : ", ");
    first = false;
    splice_program(&t, mlirArrayAttrGetElement(progs, i), have);
  }
  // The programs already there that no outer program took in.
  for (intptr_t i = 0; !mlirAttributeIsNull(have) &&
                       i < mlirArrayAttrGetNumElements(have);
       ++i) {
    MlirAttribute p = mlirArrayAttrGetElement(have, i);
    MlirStringRef n = mlirStringAttrGetValue(attn_dict_get(p, "name"));
    bool inner = false;
    for (intptr_t j = 0; j < mlirArrayAttrGetNumElements(progs) && !inner;
         ++j) {
      MlirAttribute steps =
          attn_dict_get(mlirArrayAttrGetElement(progs, j), "steps");
      for (intptr_t s = 0; s < mlirArrayAttrGetNumElements(steps); ++s)
        inner |= mlirStringRefEqual(
            mlirStringAttrGetValue(
                attn_dict_get(mlirArrayAttrGetElement(steps, s), "kernel")),
            n);
    }
    if (!inner) {
      attn_strbuf_printf(&t, "%s", first ? "" : ", ");
      attn_strbuf_attr(&t, p);
      first = false;
    }
  }
  attn_strbuf_printf(&t, "]");
  if (!set_programs(gm, ATTN_PROGRAMS_ATTR, &t))
    return attn_emit_errorf(module, "cannot record the launch programs (a "
                                    "bug in attn)");
  mlirOperationRemoveAttributeByName(module, key);
  return true;
}
