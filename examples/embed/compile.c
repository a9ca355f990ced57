// compile.c - embeds libattn: compiles an attention program to PTX in-process
// and prints the launch manifest (the PTX goes to a file when asked).
//
//   cc examples/embed/compile.c $(pkg-config --cflags --libs attn) -o /tmp/compile
//   /tmp/compile examples/rope_causal.mlir [sm_90a] [/tmp/out.ptx]
#include <attn/attn.h>

#include <stdio.h>
#include <stdlib.h>

/// Prints each diagnostic as `file:line:col: error: message`.
static void print_diag(void *user, int severity, const char *file, int line,
                       int col, const char *message) {
  static const char *names[] = {"error", "warning", "note", "remark"};
  (void)user;
  if (file)
    fprintf(stderr, "%s:%d:%d: ", file, line, col);
  fprintf(stderr, "%s: %s\n", names[severity & 3], message);
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  if (text && fread(text, 1, (size_t)n, f) == (size_t)n)
    text[n] = '\0';
  else {
    free(text);
    text = NULL;
  }
  fclose(f);
  return text;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s program.mlir [chip] [out.ptx]\n", argv[0]);
    return 2;
  }
  char *text = read_file(argv[1]);
  if (!text) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  struct attn_compile_options opts;
  attn_compile_options_init(&opts);
  opts.target = argc > 2 ? argv[2] : "sm_90a";
  opts.format = ATTN_OUTPUT_PTX;
  opts.source_name = argv[1];

  attn_result *result = NULL;
  enum attn_status st = attn_compile(text, 0, &opts, print_diag, NULL, &result);
  free(text);
  if (st != ATTN_OK) {
    fprintf(stderr, "attn_compile: %s\n", attn_status_string(st));
    return 1;
  }
  size_t size = 0;
  const char *ptx = attn_result_data(result, &size);
  printf("%s\n", attn_result_manifest(result));
  fprintf(stderr, "attn %s: %zu bytes of PTX\n", attn_version(), size);
  if (argc > 3) {
    FILE *out = fopen(argv[3], "w");
    if (!out || fwrite(ptx, 1, size, out) != size || fclose(out) != 0) {
      fprintf(stderr, "cannot write %s\n", argv[3]);
      attn_result_destroy(result);
      return 1;
    }
  }
  attn_result_destroy(result);
  return 0;
}
