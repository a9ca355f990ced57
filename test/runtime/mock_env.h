// mock_env.h - how the mock libraries (mock_cuda.c, mock_nccl.c) read the
// environment variables that switch their behaviour.

#ifndef ATTNRT_MOCK_ENV_H
#define ATTNRT_MOCK_ENV_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/// The integer in $name, or fallback when it is unset or empty.
static inline int mock_env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

/// True when the comma-separated list in $var names entry.
static inline bool mock_env_lists(const char *var, const char *entry) {
  const char *list = getenv(var);
  size_t n = strlen(entry);
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, entry, n) == 0)
      return true;
    p = end ? end + 1 : NULL;
  }
  return false;
}

/// An entry point (name a, else b) of the mock libcuda attnrt loaded from
/// $ATTNRT_CUDA_LIBRARY: the mock libncls allocate "device" memory there,
/// as the real libnccl does in the driver. NULL when absent.
static inline void *mock_cuda_symbol(const char *a, const char *b) {
  const char *path = getenv("ATTNRT_CUDA_LIBRARY");
  void *lib = path && *path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  void *fn = lib ? dlsym(lib, a) : NULL;
  if (lib && !fn)
    fn = dlsym(lib, b);
  return fn;
}

#endif // ATTNRT_MOCK_ENV_H
