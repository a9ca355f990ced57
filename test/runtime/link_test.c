// link_test.c - unit tests of attnrt_link.c: finding calls to the NCCL device shim in PTX, linking them with the embedded shim through the real nvJitLink (no GPU), and the errors of each step, also through attnrt_module_load_ptx on the mock libcuda.
//
// Tests that need the shim check attnrt_nccl_shim_available(): in a build
// without it they check the error that replaces the link instead.

#include "nccl_shim_ptx.h"
#include "mock_fixture.h"

// A kernel as MLIR emits one that calls the shim: the device communicator
// and a window as pointer parameters, the functions declared .extern.
static const char put_ptx[] =
    ".version 8.0\n"
    ".target sm_90a\n"
    ".address_size 64\n"
    "\n"
    "// .extern .func attn_nccl_in_a_comment(.param .b64 p0);\n"
    ".extern .func  (.param .b64 func_retval0) attn_nccl_peer_ptr\n"
    "(\n"
    "  .param .b64 attn_nccl_peer_ptr_param_0,\n"
    "  .param .b64 attn_nccl_peer_ptr_param_1,\n"
    "  .param .b64 attn_nccl_peer_ptr_param_2,\n"
    "  .param .b32 attn_nccl_peer_ptr_param_3\n"
    ");\n"
    ".extern .func (.param .b32 func_retval0) attn_nccl_rank(.param .b64 p0);\n"
    "\n"
    ".visible .entry put(.param .u64 dev_comm, .param .u64 window, .param .u32 peer)\n"
    "{\n"
    "  .reg .b64 %rd<8>;\n"
    "  .reg .b32 %r<4>;\n"
    "  ld.param.u64 %rd1, [dev_comm];\n"
    "  ld.param.u64 %rd2, [window];\n"
    "  ld.param.u32 %r1, [peer];\n"
    "  mov.u64 %rd3, 0;\n"
    "  {\n"
    "  .param .b64 a0; .param .b64 a1; .param .b64 a2; .param .b32 a3; .param .b64 rv;\n"
    "  st.param.b64 [a0], %rd1; st.param.b64 [a1], %rd2;\n"
    "  st.param.b64 [a2], %rd3; st.param.b32 [a3], %r1;\n"
    "  call.uni (rv), attn_nccl_peer_ptr, (a0, a1, a2, a3);\n"
    "  ld.param.b64 %rd4, [rv];\n"
    "  }\n"
    "  {\n"
    "  .param .b64 b0; .param .b32 rv2;\n"
    "  st.param.b64 [b0], %rd1;\n"
    "  call.uni (rv2), attn_nccl_rank, (b0);\n"
    "  ld.param.b32 %r2, [rv2];\n"
    "  }\n"
    "  st.global.u32 [%rd4], %r2;\n"
    "  ret;\n"
    "}\n";

static const char put_manifest[] =
    "{\"version\": 1, \"format\": \"ptx\", \"kernels\": [{\"name\": \"put\", "
    "\"grid\": [1], \"block\": [32], \"params\": [{\"name\": \"dev_comm\", "
    "\"kind\": \"ptr\"}, {\"name\": \"window\", \"kind\": \"ptr\"}, "
    "{\"name\": \"peer\", \"kind\": \"i32\"}]}]}";

// Every function of the shim, declared as a kernel would, in one kernel: the
// link fails if a declaration here and the shim's definition disagree.
static const char all_functions_ptx[] =
    ".version 8.0\n"
    ".target sm_90a\n"
    ".address_size 64\n"
    NCCL_SHIM_PTX_DECLS
    ".visible .entry all(.param .u64 dev_comm, .param .u64 window, .param .u64 out)\n"
    "{\n"
    "  .reg .b64 %rd<8>;\n"
    "  .reg .b32 %r<8>;\n"
    "  ld.param.u64 %rd1, [dev_comm];\n"
    "  ld.param.u64 %rd2, [window];\n"
    "  ld.param.u64 %rd3, [out];\n"
    "  mov.u32 %r7, 0;\n"
    "  { .param .b64 a; .param .b32 b; st.param.b64 [a], %rd1; st.param.b32 [b], %r7;\n"
    "    call.uni attn_nccl_lsa_barrier_sync, (a, b); }\n"
    "  { .param .b64 a; .param .b32 r; st.param.b64 [a], %rd1;\n"
    "    call.uni (r), attn_nccl_rank, (a); ld.param.b32 %r1, [r]; }\n"
    "  { .param .b64 a; .param .b32 r; st.param.b64 [a], %rd1;\n"
    "    call.uni (r), attn_nccl_size, (a); ld.param.b32 %r2, [r]; }\n"
    "  { .param .b64 a; .param .b32 r; st.param.b64 [a], %rd1;\n"
    "    call.uni (r), attn_nccl_lsa_rank, (a); ld.param.b32 %r3, [r]; }\n"
    "  { .param .b64 a; .param .b32 r; st.param.b64 [a], %rd1;\n"
    "    call.uni (r), attn_nccl_lsa_size, (a); ld.param.b32 %r4, [r]; }\n"
    "  { .param .b64 a; .param .b64 b; .param .b64 c; .param .b32 d; .param .b64 r;\n"
    "    st.param.b64 [a], %rd1; st.param.b64 [b], %rd2; st.param.b64 [c], 0;\n"
    "    st.param.b32 [d], %r1;\n"
    "    call.uni (r), attn_nccl_peer_ptr, (a, b, c, d); ld.param.b64 %rd4, [r]; }\n"
    "  st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r4};\n"
    "  st.global.u64 [%rd3+16], %rd4;\n"
    "  { .param .b64 a; .param .b32 b; st.param.b64 [a], %rd1; st.param.b32 [b], %r7;\n"
    "    call.uni attn_nccl_lsa_barrier_arrive, (a, b); }\n"
    "  { .param .b64 a; .param .b32 b; st.param.b64 [a], %rd1; st.param.b32 [b], %r7;\n"
    "    call.uni attn_nccl_lsa_barrier_wait, (a, b); }\n"
    "  ret;\n"
    "}\n";

// A kernel that needs no shim.
static const char plain_ptx[] =
    ".version 8.0\n"
    ".target sm_90a\n"
    ".address_size 64\n"
    ".visible .entry plain(.param .u64 p)\n"
    "{\n"
    "  .reg .b64 %rd<2>;\n"
    "  ld.param.u64 %rd1, [p];\n"
    "  st.global.u32 [%rd1], 7;\n"
    "  ret;\n"
    "}\n";

// nvJitLink 13.0 leaks what it allocated for a link whose completion fails
// (an unresolved function), nvJitLinkDestroy or not; LeakSanitizer, in the
// sanitizer builds, is told to let its allocations be.
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libnvJitLink.so\n"; }

static void before(void) {
  mock_fixture_before();
  unsetenv(ATTNRT_NVJITLINK_LIBRARY_ENV);
}

/// Returns a malloc'ed copy of text with from replaced (once) by to.
static char *replace(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  if (!at)
    return NULL;
  size_t head = (size_t)(at - text), n = strlen(text), f = strlen(from), t = strlen(to);
  char *out = malloc(n - f + t + 1);
  memcpy(out, text, head);
  memcpy(out + head, to, t);
  memcpy(out + head + t, at + f, n - head - f + 1);
  return out;
}

static bool is_elf(const void *image, size_t len) {
  return len > 4 && memcmp(image, "\x7f" "ELF", 4) == 0;
}

//===-- Finding shim calls --===//

static int test_needs_shim(void) {
  CHECK(attnrt_ptx_needs_nccl_shim(put_ptx, 0));
  CHECK(attnrt_ptx_needs_nccl_shim(put_ptx, sizeof put_ptx - 1));
  CHECK(!attnrt_ptx_needs_nccl_shim(plain_ptx, 0));
  CHECK(!attnrt_ptx_needs_nccl_shim(NULL, 0));
  // Declarations in comments, definitions and other externs do not count.
  CHECK(!attnrt_ptx_needs_nccl_shim("// .extern .func attn_nccl_rank(.param .b64 a);\n"
                                    "/* .extern .func attn_nccl_size(.param .b64 a); */\n", 0));
  CHECK(!attnrt_ptx_needs_nccl_shim(".visible .func attn_nccl_rank(.param .b64 a)\n{ ret; }\n", 0));
  CHECK(!attnrt_ptx_needs_nccl_shim(".extern .func (.param .b32 r) __nv_expf(.param .b32 a);\n", 0));
  CHECK(attnrt_ptx_needs_nccl_shim(".extern .func attn_nccl_lsa_barrier_sync(.param .b64 a, "
                                   ".param .b32 b);\n", 0));
  // Text given by length stops there.
  const char *two = ".extern .func (.param .b32 r) f(.param .b64 a);\n"
                    ".extern .func (.param .b32 r) attn_nccl_rank(.param .b64 a);\n";
  CHECK(attnrt_ptx_needs_nccl_shim(two, 0));
  CHECK(!attnrt_ptx_needs_nccl_shim(two, strlen(".extern .func (.param .b32 r) f(.param .b64 a);\n")));
  return 0;
}

static int test_shim_text(void) {
  size_t len = 1;
  const char *shim = attnrt_nccl_shim_ptx(&len);
  if (!attnrt_nccl_shim_available()) {
    CHECK(shim == NULL && len == 0);
    return 0;
  }
  CHECK(shim != NULL && len == strlen(shim));
  CHECK(contains(shim, ".target sm_90\n"));
  static const char *const functions[] = {
      "attn_nccl_peer_ptr(", "attn_nccl_rank(", "attn_nccl_size(", "attn_nccl_lsa_rank(",
      "attn_nccl_lsa_size(", "attn_nccl_lsa_barrier_arrive(", "attn_nccl_lsa_barrier_wait(",
      "attn_nccl_lsa_barrier_sync("};
  for (size_t i = 0; i < sizeof functions / sizeof functions[0]; ++i)
    CHECK(contains(shim, functions[i]));
  // One kernel, which attnrt_comm_buffer_peers launches from the shim loaded
  // alone; it rides along, unused, in every link.
  const char *entry = strstr(shim, ".entry");
  CHECK(entry != NULL && strstr(entry + 1, ".entry") == NULL);
  CHECK(contains(entry, ".entry attn_nccl_peer_table("));
  CHECK(attnrt_nccl_shim_ptx(NULL) == shim);
  return 0;
}

//===-- Linking --===//

static int test_link_peer_ptr(void) {
  void *cubin = (void *)1;
  size_t len = 1;
  enum attnrt_status st = attnrt_ptx_link(put_ptx, 0, NULL, &cubin, &len);
  if (!attnrt_nccl_shim_available()) {
    CHECK(st == ATTNRT_ERR_NOT_FOUND && cubin == NULL && len == 0);
    CHECK(contains(attnrt_last_error(NULL),
                   "the PTX calls attn_nccl_peer_ptr, but this libattnrt was built "
                   "without the NCCL device shim"));
    return 0;
  }
  if (st != ATTNRT_OK)
    fprintf(stderr, "%s\n", attnrt_last_error(NULL));
  CHECK(st == ATTNRT_OK && cubin != NULL && is_elf(cubin, len));
  attnrt_cubin_free(cubin);
  // Given by length, without a NUL, and for an explicit arch.
  char *copy = malloc(sizeof put_ptx - 1);
  memcpy(copy, put_ptx, sizeof put_ptx - 1);
  CHECK(attnrt_ptx_link(copy, sizeof put_ptx - 1, "sm_90a", &cubin, &len) == ATTNRT_OK);
  CHECK(is_elf(cubin, len));
  attnrt_cubin_free(cubin);
  free(copy);
  attnrt_cubin_free(NULL);
  return 0;
}

static int test_link_all_functions(void) {
  if (!attnrt_nccl_shim_available())
    return 0;
  void *cubin = NULL;
  size_t len = 0;
  enum attnrt_status st = attnrt_ptx_link(all_functions_ptx, 0, NULL, &cubin, &len);
  if (st != ATTNRT_OK)
    fprintf(stderr, "%s\n", attnrt_last_error(NULL));
  CHECK(st == ATTNRT_OK && is_elf(cubin, len));
  attnrt_cubin_free(cubin);
  return 0;
}

static int test_link_plain(void) {
  // PTX without shim calls links alone (a PTX-to-cubin compile).
  void *cubin = NULL;
  size_t len = 0;
  CHECK(attnrt_ptx_link(plain_ptx, 0, NULL, &cubin, &len) == ATTNRT_OK);
  CHECK(is_elf(cubin, len));
  attnrt_cubin_free(cubin);
  return 0;
}

static int test_link_malformed(void) {
  if (!attnrt_nccl_shim_available())
    return 0;
  char *bad = replace(put_ptx, "ld.param.u64 %rd1, [dev_comm];", "ld.param.u64 %rdX1, [dev_comm];");
  CHECK(bad != NULL);
  void *cubin = (void *)1;
  size_t len = 1;
  CHECK(attnrt_ptx_link(bad, 0, NULL, &cubin, &len) == ATTNRT_ERR_CUDA);
  CHECK(cubin == NULL && len == 0);
  const char *msg = attnrt_last_error(NULL);
  CHECK(contains(msg, "nvJitLinkAddData(kernel.ptx) failed for sm_90a: NVJITLINK_ERROR_PTX_COMPILE"));
  CHECK(contains(msg, "; nvJitLink log:\n"));
  CHECK(contains(msg, "%rdX1")); // ptxas's complaint, from nvJitLink's log
  free(bad);
  // Not PTX at all.
  CHECK(attnrt_ptx_link("garbage\n.target sm_90a\n", 0, NULL, &cubin, &len) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(NULL), "nvJitLinkAddData(kernel.ptx) failed"));
  // An arch nvJitLink does not know.
  CHECK(attnrt_ptx_link(plain_ptx, 0, "sm_999", &cubin, &len) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(NULL),
                 "nvJitLinkCreate failed for sm_999: NVJITLINK_ERROR_UNRECOGNIZED_ARCH"));
  return 0;
}

static int test_link_unresolved(void) {
  // A function of attn_nccl_'s family that the shim lacks: named before
  // nvJitLink runs.
  char *unknown = replace(put_ptx, "attn_nccl_rank(.param", "attn_nccl_frobnicate(.param");
  CHECK(unknown != NULL);
  void *cubin = NULL;
  size_t len = 0;
  CHECK(attnrt_ptx_link(unknown, 0, NULL, &cubin, &len) == ATTNRT_ERR_NOT_FOUND);
  if (attnrt_nccl_shim_available())
    CHECK(contains(attnrt_last_error(NULL),
                   "the PTX calls attn_nccl_frobnicate, which the NCCL device shim "
                   "does not define"));
  else
    CHECK(contains(attnrt_last_error(NULL), "without the NCCL device shim"));
  free(unknown);
  // Any other unresolved function: nvJitLink's own message.
  char *other = replace(plain_ptx, ".visible .entry",
                        ".extern .func missing_helper();\n.visible .entry");
  char *calls = replace(other, "ret;", "call.uni missing_helper, ();\n  ret;");
  CHECK(attnrt_ptx_link(calls, 0, NULL, &cubin, &len) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(NULL), "nvJitLinkComplete failed"));
  CHECK(contains(attnrt_last_error(NULL), "missing_helper"));
  free(other);
  free(calls);
  return 0;
}

static int test_link_arguments(void) {
  void *cubin = (void *)1;
  size_t len = 1;
  CHECK(attnrt_ptx_link(NULL, 0, NULL, &cubin, &len) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(cubin == NULL && len == 0);
  CHECK(contains(attnrt_last_error(NULL), "attnrt_ptx_link: ptx is NULL"));
  CHECK(attnrt_ptx_link(plain_ptx, 0, NULL, NULL, &len) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(attnrt_ptx_link(plain_ptx, 0, NULL, &cubin, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(attnrt_ptx_link("", 0, NULL, &cubin, &len) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "attnrt_ptx_link: ptx is empty"));
  CHECK(attnrt_ptx_link(".version 8.0\n", 0, NULL, &cubin, &len) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "no .target directive"));
  // Names nvJitLink would not survive (a one-digit arch ends the process).
  CHECK(attnrt_ptx_link(plain_ptx, 0, "sm_1", &cubin, &len) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL),
                 "attnrt_ptx_link: arch 'sm_1' (given) is not of the form sm_NN, sm_NNa or sm_NNf"));
  CHECK(attnrt_ptx_link(".version 8.0\n.target compute_90\n", 0, NULL, &cubin, &len) ==
        ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "arch 'compute_90' (the PTX's .target)"));
  return 0;
}

static int test_nvjitlink_missing(void) {
  void *cubin = NULL;
  size_t len = 0;
  setenv(ATTNRT_NVJITLINK_LIBRARY_ENV, "/nonexistent/libnvJitLink.so.13", 1);
  CHECK(attnrt_ptx_link(plain_ptx, 0, NULL, &cubin, &len) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(NULL),
                 "cannot load nvJitLink '/nonexistent/libnvJitLink.so.13' "
                 "(ATTNRT_NVJITLINK_LIBRARY): "));
  setenv(ATTNRT_NVJITLINK_LIBRARY_ENV, "libm.so.6", 1);
  CHECK(attnrt_ptx_link(plain_ptx, 0, NULL, &cubin, &len) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(NULL), "'libm.so.6' has no entry point nvJitLinkCreate"));
  unsetenv(ATTNRT_NVJITLINK_LIBRARY_ENV);
  return 0;
}

//===-- Loading modules that call the shim --===//

static int test_module_links_shim(void) {
  CREATE_RUNTIME(rt);
  attnrt_module *m = NULL;
  // The mock driver cannot read a cubin: make its load fail to see that the
  // linked image reached it.
  setenv("MOCK_CUDA_FAIL", "cuModuleLoadDataEx", 1);
  enum attnrt_status st = attnrt_module_load_ptx(rt, put_ptx, 0, put_manifest, &m);
  unsetenv("MOCK_CUDA_FAIL");
  if (attnrt_nccl_shim_available()) {
    CHECK(st == ATTNRT_ERR_CUDA && m == NULL);
    CHECK(contains(attnrt_last_error(rt), "cuModuleLoadDataEx failed"));
  } else {
    CHECK(st == ATTNRT_ERR_NOT_FOUND && m == NULL);
    CHECK(contains(attnrt_last_error(rt), "attnrt_module_load_ptx: the PTX calls "
                                          "attn_nccl_peer_ptr, but this libattnrt"));
  }
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_module_link_errors(void) {
  CREATE_RUNTIME(rt);
  attnrt_module *m = NULL;
  // nvJitLink's log reaches the runtime's message; the driver is not asked.
  char *bad = replace(put_ptx, "ld.param.u64 %rd1, [dev_comm];", "ld.param.u64 %rdX1, [dev_comm];");
  enum attnrt_status st = attnrt_module_load_ptx(rt, bad, 0, put_manifest, &m);
  free(bad);
  if (attnrt_nccl_shim_available()) {
    CHECK(st == ATTNRT_ERR_CUDA && m == NULL);
    CHECK(contains(attnrt_last_error(rt), "attnrt_module_load_ptx: nvJitLinkAddData(kernel.ptx) "
                                          "failed for sm_90a: NVJITLINK_ERROR_PTX_COMPILE"));
    CHECK(contains(attnrt_last_error(rt), "%rdX1"));
  } else {
    CHECK(st == ATTNRT_ERR_NOT_FOUND);
  }
  CHECK(mock_cuda_state()->jit_log_bytes == 0);

  setenv(ATTNRT_NVJITLINK_LIBRARY_ENV, "/nonexistent/libnvJitLink.so", 1);
  st = attnrt_module_load_ptx(rt, put_ptx, 0, put_manifest, &m);
  if (attnrt_nccl_shim_available()) {
    CHECK(st == ATTNRT_ERR_CUDA && m == NULL);
    CHECK(contains(attnrt_last_error(rt), "attnrt_module_load_ptx: cannot load nvJitLink"));
  }
  // PTX without shim calls never needs nvJitLink.
  static const char manifest[] =
      "{\"version\": 1, \"kernels\": [{\"name\": \"plain\", \"grid\": [1], "
      "\"block\": [1], \"params\": [{\"name\": \"p\", \"kind\": \"ptr\"}]}]}";
  CHECK(attnrt_module_load_ptx(rt, plain_ptx, 0, manifest, &m) == ATTNRT_OK);
  attnrt_module_destroy(m);
  unsetenv(ATTNRT_NVJITLINK_LIBRARY_ENV);
  attnrt_runtime_destroy(rt);
  return 0;
}

//===-- PTX to SASS for a runtime's device --===//

static int test_nvjitlink_version(void) {
  int major = -1, minor = -1;
  CHECK(attnrt_nvjitlink_version(&major, &minor) == ATTNRT_OK);
  CHECK(major >= 12 && minor >= 0);
  CHECK(attnrt_nvjitlink_version(NULL, &minor) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "attnrt_nvjitlink_version: major is NULL"));
  // Absent: the caller falls back to the driver's JIT.
  setenv(ATTNRT_NVJITLINK_LIBRARY_ENV, "/nonexistent/libnvJitLink.so.13", 1);
  CHECK(attnrt_nvjitlink_version(&major, &minor) == ATTNRT_ERR_CUDA);
  CHECK(major == 0 && minor == 0);
  CHECK(contains(attnrt_last_error(NULL), "cannot load nvJitLink '/nonexistent/libnvJitLink.so.13'"));
  unsetenv(ATTNRT_NVJITLINK_LIBRARY_ENV);
  return 0;
}

static int test_sass_arch(void) {
  char arch[16];
  {
    CREATE_RUNTIME(rt); // the mock's default: compute capability 9.0
    CHECK(attnrt_runtime_sass_arch(rt, "sm_90a", arch, sizeof arch) == ATTNRT_OK);
    CHECK(strcmp(arch, "sm_90a") == 0);
    CHECK(attnrt_runtime_sass_arch(rt, "sm_90", arch, sizeof arch) == ATTNRT_OK);
    CHECK(strcmp(arch, "sm_90") == 0);
    CHECK(attnrt_runtime_sass_arch(rt, "sm_80", arch, sizeof arch) == ATTNRT_OK);
    CHECK(strcmp(arch, "sm_90") == 0);
    // Another chip's arch-specific PTX keeps nothing of its suffix.
    CHECK(attnrt_runtime_sass_arch(rt, "sm_100a", arch, sizeof arch) == ATTNRT_OK);
    CHECK(strcmp(arch, "sm_90") == 0);
    CHECK(attnrt_runtime_sass_arch(rt, "compute_90", arch, sizeof arch) ==
          ATTNRT_ERR_INVALID_ARGUMENT);
    CHECK(contains(attnrt_last_error(rt), "target 'compute_90' is not of the form"));
    CHECK(attnrt_runtime_sass_arch(rt, "sm_90a", arch, 6) == ATTNRT_ERR_INVALID_ARGUMENT);
    CHECK(contains(attnrt_last_error(rt), "6 bytes do not hold 'sm_90a'"));
    CHECK(attnrt_runtime_sass_arch(rt, NULL, arch, sizeof arch) == ATTNRT_ERR_INVALID_ARGUMENT);
    CHECK(attnrt_runtime_sass_arch(NULL, "sm_90a", arch, sizeof arch) ==
          ATTNRT_ERR_INVALID_ARGUMENT);
    attnrt_runtime_destroy(rt);
  }
  setenv("MOCK_CUDA_CC", "8.6", 1);
  CREATE_RUNTIME(rt);
  CHECK(attnrt_runtime_sass_arch(rt, "sm_80", arch, sizeof arch) == ATTNRT_OK);
  CHECK(strcmp(arch, "sm_86") == 0);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_ptx_to_cubin(void) {
  CREATE_RUNTIME(rt);
  void *cubin = (void *)1;
  size_t len = 1;
  // The arch from the PTX's .target and the device (sm_90a on 9.0).
  enum attnrt_status st = attnrt_runtime_ptx_to_cubin(rt, plain_ptx, 0, NULL, &cubin, &len);
  if (st != ATTNRT_OK)
    fprintf(stderr, "%s\n", attnrt_last_error(rt));
  CHECK(st == ATTNRT_OK && is_elf(cubin, len));
  // The cubin loads as a cubin (the mock reads its kernels' parameters from
  // the ELF's .nv.info sections) and launches with the manifest's arguments.
  static const char manifest[] =
      "{\"version\": 1, \"format\": \"cubin\", \"kernels\": [{\"name\": \"plain\", "
      "\"grid\": [1], \"block\": [1], \"params\": [{\"name\": \"p\", \"kind\": \"ptr\"}]}]}";
  attnrt_module *m = NULL;
  CHECK(attnrt_module_load_cubin(rt, cubin, len, manifest, &m) == ATTNRT_OK);
  CHECK(mock_cuda_state()->cubin_loads == 1 && mock_cuda_cubin_loads() == 1);
  struct attnrt_arg arg = {.kind = ATTNRT_ARG_PTR, .v.ptr = 0x1000};
  CHECK(attnrt_launch(m, "plain", &arg, 1, NULL) == ATTNRT_OK);
  const struct mock_cuda_launch *l = &mock_cuda_state()->last_launch;
  CHECK(strcmp(l->kernel, "plain") == 0 && l->nparams == 1 && l->param_size[0] == 8 &&
        l->params[0] == 0x1000);
  // A kernel the cubin lacks.
  attnrt_module *none = NULL;
  char *other = replace(manifest, "\"plain\"", "\"other\"");
  CHECK(attnrt_module_load_cubin(rt, cubin, len, other, &none) == ATTNRT_ERR_NOT_FOUND);
  free(other);
  attnrt_module_destroy(m);
  attnrt_cubin_free(cubin);
  // For an explicit arch, by length without a NUL.
  char *copy = malloc(sizeof plain_ptx - 1);
  memcpy(copy, plain_ptx, sizeof plain_ptx - 1);
  CHECK(attnrt_runtime_ptx_to_cubin(rt, copy, sizeof plain_ptx - 1, "sm_90a", &cubin, &len) ==
        ATTNRT_OK);
  CHECK(is_elf(cubin, len));
  attnrt_cubin_free(cubin);
  free(copy);
  // sm_90a PTX cannot run on an sm_100 device: nvJitLink says so, in rt's message.
  CHECK(attnrt_runtime_ptx_to_cubin(rt, plain_ptx, 0, "sm_100", &cubin, &len) ==
        ATTNRT_ERR_CUDA);
  CHECK(cubin == NULL && len == 0);
  CHECK(contains(attnrt_last_error(rt), "attnrt_runtime_ptx_to_cubin: "));
  // Malformed PTX: ptxas's complaint from nvJitLink's log.
  char *bad = replace(plain_ptx, "ld.param.u64 %rd1, [p];", "ld.param.u64 %rdX1, [p];");
  CHECK(attnrt_runtime_ptx_to_cubin(rt, bad, 0, NULL, &cubin, &len) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(rt), "attnrt_runtime_ptx_to_cubin: nvJitLinkAddData(kernel.ptx) "
                                        "failed for sm_90a: NVJITLINK_ERROR_PTX_COMPILE"));
  CHECK(contains(attnrt_last_error(rt), "%rdX1"));
  free(bad);
  // Arguments.
  CHECK(attnrt_runtime_ptx_to_cubin(rt, ".version 8.0\n", 0, NULL, &cubin, &len) ==
        ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "no .target directive and no arch was given"));
  CHECK(attnrt_runtime_ptx_to_cubin(rt, NULL, 0, NULL, &cubin, &len) ==
        ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_runtime_ptx_to_cubin: ptx is NULL"));
  CHECK(attnrt_runtime_ptx_to_cubin(NULL, plain_ptx, 0, NULL, &cubin, &len) ==
        ATTNRT_ERR_INVALID_ARGUMENT);
  // No nvJitLink: a clear message naming the variable that finds one.
  setenv(ATTNRT_NVJITLINK_LIBRARY_ENV, "/nonexistent/libnvJitLink.so.13", 1);
  CHECK(attnrt_runtime_ptx_to_cubin(rt, plain_ptx, 0, NULL, &cubin, &len) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(rt), "attnrt_runtime_ptx_to_cubin: cannot load nvJitLink "
                                        "'/nonexistent/libnvJitLink.so.13' (ATTNRT_NVJITLINK_LIBRARY)"));
  unsetenv(ATTNRT_NVJITLINK_LIBRARY_ENV);
  attnrt_runtime_destroy(rt);
  return 0;
}

int main(void) {
  static const struct test_case tests[] = {
      TEST(test_needs_shim),
      TEST(test_shim_text),
      TEST(test_link_peer_ptr),
      TEST(test_link_all_functions),
      TEST(test_link_plain),
      TEST(test_link_malformed),
      TEST(test_link_unresolved),
      TEST(test_link_arguments),
      TEST(test_nvjitlink_missing),
      TEST(test_module_links_shim),
      TEST(test_module_link_errors),
      TEST(test_nvjitlink_version),
      TEST(test_sass_arch),
      TEST(test_ptx_to_cubin),
  };
  mock_fixture_init();
  return run_tests(tests, sizeof tests / sizeof tests[0], before, mock_fixture_after);
}
