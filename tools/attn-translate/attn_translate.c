//===- attn_translate.c - attn-translate: IR to PTX/cubin and a manifest --===//
//
// Takes a module at any level (attn or linalg.matmul, tile, or gpu after
// lower-tile-to-gpu),
// runs the missing attn passes, and emits PTX (--to-ptx) or a cubin
// (--to-cubin) for the chip, plus the JSON launch manifest (--manifest=).
//
//===----------------------------------------------------------------------===//
#include "dialects/dialects.h"
#include "dialects/tile/tile_dialect.h"
#include "lib/IR/attn_context.h"
#include "lib/Target/attn_target.h"
#include "lib/Transforms/transforms.h"
#include "tools/common/tool_util.h"

#include "mlir-c/Pass.h"

#include <stdlib.h>
#include <string.h>

static const char *tool = "attn-translate";

struct options {
  const char *input, *output, *manifest, *irdl_file, *toolkit;
  const char *chip, *features, *tile_options, *hopper_options;
  const char *rope_strategy; // attn-fuse's rope-strategy, NULL: default
  enum attn_gpu_kernel kernel;
  int format; // -1 none, else enum attn_binary_format
  bool manifest_only;
  bool grad; // --grad: attn-grad after attn-fuse
};

static const struct attn_tool_option tool_options[] = {
    {"--to-ptx", "flag", "off", "print PTX"},
    {"--to-cubin", "flag", "off", "write a cubin (assembled by ptxas)"},
    {"--to-manifest", "flag", "off", "print the JSON launch manifest only"},
    {"--manifest=<file>", "file", "none", "also write the launch manifest"},
    {"-o <file>", "file", "- (stdout)", "write the output to file"},
    {"--chip=<sm_XX>", "string", "sm_90a", "target chip"},
    {"--features=<+ptxNN>", "string", "the chip's minimum", "PTX ISA"},
    {"--kernel=<auto|hopper|mma|plain>", "enum", "auto",
     "GPU kernel family (auto: the tensor-core kernel the chip allows)"},
    {"--hopper-options=<text>", "string", "none",
     "lower-tile-to-hopper's options, e.g. 'stages=2 ctas=132'"},
    {"--rope-strategy=<s>", "string",
     "auto with attn.project, else the lowering's",
     "where RoPE runs: auto, fused, split, pre or producer"},
    {"--tile-options=<text>", "string", "none",
     "attn-tile's options, e.g. 'block-m=32 block-n=32'"},
    {"--grad", "flag", "off",
     "also compile each attention's backward (attn-grad: @f returns out "
     "and lse, @f__grad's kernels compute dq, dk, dv)"},
    {"--toolkit=<dir>", "directory", "$CUDA_HOME or /usr/local/cuda",
     "CUDA toolkit"},
    {"--irdl-file=<file>", "file", "the built-in IRDL",
     "load the dialects from this IRDL"},
    {NULL, NULL, NULL, NULL},
};

static void usage(FILE *f) {
  fprintf(f, "usage: attn-translate (--to-ptx | --to-cubin | --to-manifest) "
             "[options] [input.mlir|-]\n\n"
             "Compiles an attn (or linalg.matmul), tile or gpu-level module "
             "to a GPU binary.\nOptions take one dash or two (-to-ptx).\n\n"
             "options:\n");
  attn_tool_print_options(f, tool_options);
  attn_tool_print_options(f, attn_tool_common_options);
}

static int parse_args(int argc, char **argv, struct options *o) {
  o->format = -1;
  o->chip = "sm_90a";
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    bool exit_now = false;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 2;
    }
    if (attn_tool_common_arg(tool, a, &exit_now)) {
      if (exit_now)
        return 2;
    } else if (!strcmp(a, "--to-ptx"))
      o->format = ATTN_FORMAT_PTX;
    else if (!strcmp(a, "--to-cubin"))
      o->format = ATTN_FORMAT_CUBIN;
    else if (!strcmp(a, "--to-manifest")) {
      o->format = ATTN_FORMAT_PTX;
      o->manifest_only = true;
    } else if (!strncmp(a, "--manifest=", 11))
      o->manifest = a + 11;
    else if (!strncmp(a, "--chip=", 7))
      o->chip = a + 7;
    else if (!strncmp(a, "--features=", 11))
      o->features = a + 11;
    else if (!strncmp(a, "--tile-options=", 15))
      o->tile_options = a + 15;
    else if (!strncmp(a, "--hopper-options=", 17))
      o->hopper_options = a + 17;
    else if (!strncmp(a, "--rope-strategy=", 16))
      o->rope_strategy = a + 16;
    else if (!strcmp(a, "--grad"))
      o->grad = true;
    else if (!strncmp(a, "--kernel=", 9)) {
      const char *k = a + 9;
      if (!strcmp(k, "auto"))
        o->kernel = ATTN_GPU_KERNEL_AUTO;
      else if (!strcmp(k, "hopper"))
        o->kernel = ATTN_GPU_KERNEL_HOPPER;
      else if (!strcmp(k, "mma"))
        o->kernel = ATTN_GPU_KERNEL_MMA;
      else if (!strcmp(k, "plain"))
        o->kernel = ATTN_GPU_KERNEL_PLAIN;
      else {
        fprintf(stderr, "%s: error: unknown kernel '%s' (expected auto, "
                        "hopper, mma or plain)\n",
                tool, k);
        return 1;
      }
    }
    else if (!strncmp(a, "--toolkit=", 10))
      o->toolkit = a + 10;
    else if (!strncmp(a, "--irdl-file=", 12))
      o->irdl_file = a + 12;
    else if (!strcmp(a, "-o")) {
      if (++i == argc) {
        fprintf(stderr, "%s: error: -o needs a file name\n", tool);
        return 1;
      }
      o->output = argv[i];
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "%s: error: unknown option '%s' (see --help)\n", tool, a);
      return 1;
    } else if (o->input) {
      fprintf(stderr, "%s: error: more than one input file\n", tool);
      return 1;
    } else
      o->input = a;
  }
  if (o->format < 0) {
    fprintf(stderr, "%s: error: choose --to-ptx, --to-cubin or "
                    "--to-manifest\n",
            tool);
    return 1;
  }
  return 0;
}

struct stage {
  bool attn, tile;
};

static MlirWalkResult find_stage(MlirOperation op, void *user) {
  struct stage *s = user;
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (n.length > 5 && !strncmp(n.data, "attn.", 5))
    s->attn = true;
  if (attn_tile_is_kernel(op))
    s->tile = true;
  return MlirWalkResultAdvance;
}

/// Runs whatever attn passes the module still needs to reach gpu level.
static bool lower_to_gpu(MlirContext ctx, MlirOperation module,
                         const struct options *o) {
  struct stage s = {false, false};
  mlirOperationWalk(module, find_stage, &s, MlirWalkPreOrder);
  bool matmul = attn_has_matmul(module); // linalg.matmul: attn-tile's too
  if (!s.attn && !s.tile && !matmul)
    return true;
  if (s.attn) {
    struct attn_strbuf f = {0};
    attn_fuse_pipeline(module, o->rope_strategy, o->grad, &f);
    bool fused = !f.failed && attn_tool_run_pipeline(tool, module, f.buf);
    attn_strbuf_free(&f);
    if (!fused)
      return false;
  }
  struct attn_strbuf p = {0};
  if (s.attn || matmul) {
    attn_gpu_pipeline(module, o->chip, o->features, o->kernel,
                      o->tile_options, o->hopper_options, &p);
  } else {
    // Tile-level input: the Hopper lowering takes what it can.
    const char *ho = o->hopper_options ? o->hopper_options : "";
    if (o->kernel == ATTN_GPU_KERNEL_HOPPER)
      attn_strbuf_printf(&p, "lower-tile-to-hopper{%s},", ho);
    else if (o->kernel == ATTN_GPU_KERNEL_AUTO && !strcmp(o->chip, "sm_90a"))
      attn_strbuf_printf(&p, "lower-tile-to-hopper{fallback=true %s},", ho);
    else if (o->kernel == ATTN_GPU_KERNEL_MMA)
      attn_strbuf_printf(&p, "lower-tile-to-mma{chip=%s},", o->chip);
    attn_strbuf_printf(&p, "lower-tile-to-gpu{chip=%s", o->chip);
    if (o->features)
      attn_strbuf_printf(&p, " features=%s", o->features);
    attn_strbuf_printf(&p, "}");
  }
  bool ok = !p.failed && attn_tool_run_pipeline(tool, module, p.buf);
  attn_strbuf_free(&p);
  return ok;
}

static bool write_file(const char *path, const char *data, size_t len,
                       const char *mode) {
  FILE *f = attn_tool_open_output(tool, path, mode);
  if (!f)
    return false;
  fwrite(data, 1, len, f);
  return attn_tool_close_output(tool, f);
}

int main(int argc, char **argv) {
  struct options o = {0};
  char **args = attn_tool_args(tool, argc, argv);
  int rc = args ? parse_args(argc, args, &o) : 1;
  char *text = rc ? NULL : attn_tool_read_input(tool, o.input, NULL);
  if (!text) {
    attn_tool_args_free(argc, args, argv);
    return rc == 2 ? 0 : 1;
  }
  const char *filename = o.input && strcmp(o.input, "-") ? o.input : "<stdin>";
  MlirContext ctx = attn_context_create();
  struct attn_diag_sink sink = {stderr, 0, 0};
  struct attn_tool_remarks remarks = {stderr, 0};
  attn_diag_attach(ctx, &sink);
  attn_tool_attach_remarks(ctx, &remarks);
  bool ok = attn_register_all(ctx, o.irdl_file);
  MlirOperation module = {NULL};
  if (ok) {
    module = attn_tool_parse_module(ctx, text, filename);
    ok = !mlirOperationIsNull(module) && mlirOperationVerify(module) &&
         attn_dialects_verify(module) && lower_to_gpu(ctx, module, &o);
  }
  struct attn_binary bin = {0};
  if (ok && o.manifest_only) {
    char *m = attn_manifest_create(module, NULL, ATTN_FORMAT_PTX);
    ok = m && write_file(o.output, m, strlen(m), "w");
    if (ok && o.output == NULL)
      putchar('\n');
    free(m);
  } else if (ok) {
    ok = attn_target_emit(module, (enum attn_binary_format)o.format, o.toolkit,
                          &bin);
    if (ok)
      ok = write_file(o.output, bin.data, bin.size,
                      o.format == ATTN_FORMAT_PTX ? "w" : "wb");
    if (ok && o.manifest)
      ok = write_file(o.manifest, bin.manifest, strlen(bin.manifest), "w");
  }
  attn_binary_free(&bin);
  if (!ok)
    attn_tool_note_remarks(tool, &remarks);
  if (!mlirOperationIsNull(module))
    mlirOperationDestroy(module);
  free(text);
  attn_tool_args_free(argc, args, argv);
  attn_remark_handler_detach(ctx);
  mlirContextDestroy(ctx);
  return ok && sink.errors == 0 ? 0 : 1;
}
