// attnrt_rendezvous.c - how the ranks of a job find each other: the torchrun-style configuration from the environment and the TCP rendezvous that hands rank 0's ncclUniqueId to every rank.

#include "attnrt_comm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

//===-- Configuration from the environment --===//

/// Parses the integer environment variable name into *out, between lo and
/// hi. *present says whether it was set (when optional is true a missing
/// variable is not an error). Errors go to the thread slot.
static enum attnrt_status env_int(const char *name, const char *meaning,
                                  long lo, long hi, bool optional,
                                  bool *present, int *out) {
  const char *v = getenv(name);
  *present = v && *v;
  if (!*present) {
    if (optional)
      return ATTNRT_OK;
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s is not set: expected %s (torchrun sets it)", name,
                       meaning);
  }
  char *end = NULL;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (end == v || *end != '\0' || errno == ERANGE)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s='%s' is not an integer: expected %s", name, v, meaning);
  if (x < lo || x > hi)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s=%ld is out of range: expected %ld to %ld", name, x,
                       lo, hi);
  *out = (int)x;
  return ATTNRT_OK;
}

enum attnrt_status attnrt_comm_check_config(const struct attnrt_comm_config *cfg,
                                            const char *caller) {
  if (cfg->world_size < 1)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: world size %d must be at least 1", caller,
                       cfg->world_size);
  if (cfg->rank < 0 || cfg->rank >= cfg->world_size)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: rank %d must be below the world size %d (RANK < "
                       "WORLD_SIZE)",
                       caller, cfg->rank, cfg->world_size);
  if (cfg->local_rank < 0)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: local rank %d is negative", caller, cfg->local_rank);
  if (!(cfg->timeout_s > 0))
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: timeout %g s must be positive", caller, cfg->timeout_s);
  if (cfg->world_size > 1) {
    if (memchr(cfg->master_addr, '\0', sizeof cfg->master_addr) == NULL ||
        cfg->master_addr[0] == '\0')
      return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                         "%s: the master address is empty", caller);
    if (cfg->master_port < 1 || cfg->master_port > 65535)
      return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                         "%s: master port %d is out of range: expected 1 to 65535",
                         caller, cfg->master_port);
  }
  return ATTNRT_OK;
}

ATTNRT_API enum attnrt_status
attnrt_comm_config_from_env(struct attnrt_comm_config *cfg) {
  if (!cfg)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_config_from_env: cfg is NULL");
  memset(cfg, 0, sizeof *cfg);
  bool present = false;
  enum attnrt_status st =
      env_int("WORLD_SIZE", "the number of ranks", 1, INT_MAX, false, &present,
              &cfg->world_size);
  if (st != ATTNRT_OK)
    return st;
  st = env_int("RANK", "the rank of this process", 0, INT_MAX, false, &present,
               &cfg->rank);
  if (st != ATTNRT_OK)
    return st;
  if (cfg->rank >= cfg->world_size)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "RANK=%d must be below WORLD_SIZE=%d", cfg->rank,
                       cfg->world_size);
  st = env_int("LOCAL_RANK", "the device ordinal of this rank", 0, INT_MAX, true,
               &present, &cfg->local_rank);
  if (st != ATTNRT_OK)
    return st;
  if (!present)
    cfg->local_rank = cfg->rank;

  const char *addr = getenv("MASTER_ADDR");
  bool need_master = cfg->world_size > 1;
  if (addr && *addr) {
    if (strlen(addr) > ATTNRT_COMM_ADDR_MAX)
      return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                         "MASTER_ADDR is %zu bytes long: at most %d are accepted",
                         strlen(addr), ATTNRT_COMM_ADDR_MAX);
    snprintf(cfg->master_addr, sizeof cfg->master_addr, "%s", addr);
  } else if (need_master) {
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "MASTER_ADDR is not set: expected the host name or "
                       "address of rank 0 (torchrun sets it)");
  }
  st = env_int("MASTER_PORT", "the TCP port rank 0 listens on", 1, 65535,
               !need_master, &present, &cfg->master_port);
  if (st != ATTNRT_OK)
    return st;

  cfg->timeout_s = ATTNRT_COMM_TIMEOUT_DEFAULT_S;
  if (!attnrt_env_seconds(ATTNRT_COMM_TIMEOUT_ENV, false, &cfg->timeout_s))
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s='%s' is not a positive number of seconds",
                       ATTNRT_COMM_TIMEOUT_ENV,
                       getenv(ATTNRT_COMM_TIMEOUT_ENV));
  return ATTNRT_OK;
}

//===-- Rendezvous: the ncclUniqueId over TCP --===//
//
// Rank 0 listens on master_port (all addresses). Every other rank connects to
// master_addr:master_port, retrying until the deadline, and sends a hello of
// four big-endian uint32: magic, protocol version, rank, world size. Rank 0
// answers magic, status (0 or one of the codes below) and, on success, the
// 128-byte id. Rank 0 returns once every rank has been answered.

#define RDV_MAGIC 0x4154434eu // "ATCN"
#define RDV_VERSION 1u
enum { RDV_OK = 0, RDV_BAD_RANK = 1, RDV_BAD_SIZE = 2, RDV_DUPLICATE = 3 };

static void put_u32(unsigned char *p, uint32_t x) {
  p[0] = (unsigned char)(x >> 24);
  p[1] = (unsigned char)(x >> 16);
  p[2] = (unsigned char)(x >> 8);
  p[3] = (unsigned char)x;
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

/// Milliseconds left before deadline (0 when past it), capped at cap_ms.
static int remaining_ms(double deadline, int cap_ms) {
  double left = (deadline - now_s()) * 1000.0;
  if (left <= 0)
    return 0;
  return left > cap_ms ? cap_ms : (int)left + 1;
}

/// Reads or writes exactly n bytes on the non-blocking socket fd before
/// deadline. Returns 0, or -1 with errno (ETIMEDOUT past the deadline,
/// ECONNRESET when the peer closed the connection).
static int transfer_all(int fd, void *buf, size_t n, bool writing,
                        double deadline) {
  unsigned char *p = buf;
  while (n > 0) {
    ssize_t k = writing ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
    if (k > 0) {
      p += k;
      n -= (size_t)k;
      continue;
    }
    if (k == 0) {
      errno = ECONNRESET;
      return -1;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return -1;
    int ms = remaining_ms(deadline, 1000);
    if (ms == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    struct pollfd pfd = {fd, writing ? POLLOUT : POLLIN, 0};
    if (poll(&pfd, 1, ms) < 0 && errno != EINTR)
      return -1;
  }
  return 0;
}

static int set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/// Opens a listening socket on port (every local address). Returns the
/// descriptor, or -1 with *call naming the failed call and errno set.
static int open_listener(int port, const char **call) {
  char service[16];
  snprintf(service, sizeof service, "%d", port);
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  struct addrinfo *list = NULL;
  int gai = getaddrinfo(NULL, service, &hints, &list);
  if (gai != 0) {
    *call = "getaddrinfo";
    errno = EINVAL;
    return -1;
  }
  int fd = -1, saved = 0;
  // Prefer IPv6's wildcard (dual-stack on Linux); fall back to IPv4's.
  for (int pass = 0; pass < 2 && fd < 0; ++pass) {
    for (struct addrinfo *a = list; a && fd < 0; a = a->ai_next) {
      if ((pass == 0) != (a->ai_family == AF_INET6))
        continue;
      fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) {
        *call = "socket";
        saved = errno;
        continue;
      }
      int one = 1, zero = 0;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      // IPv4 peers reach an IPv6 wildcard socket only when it is dual-stack,
      // which the net.ipv6.bindv6only sysctl may have turned off.
      if (a->ai_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      if (bind(fd, a->ai_addr, a->ai_addrlen) != 0) {
        *call = "bind";
        saved = errno;
      } else if (listen(fd, 128) != 0) {
        *call = "listen";
        saved = errno;
      } else if (set_nonblocking(fd) != 0) {
        *call = "fcntl";
        saved = errno;
      } else {
        break;
      }
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(list);
  if (fd < 0)
    errno = saved;
  return fd;
}

enum attnrt_status attnrt_comm_serve_id(attnrt_runtime *rt,
                                        const struct attnrt_comm_config *cfg,
                                        const nccl_unique_id *id,
                                        double deadline) {
  const char *call = "socket";
  int lfd = open_listener(cfg->master_port, &call);
  if (lfd < 0)
    return attnrt_fail(rt, ATTNRT_ERR_NCCL,
                       "rendezvous: rank 0 cannot listen on port %d: %s: %s",
                       cfg->master_port, call, strerror(errno));
  bool *joined = calloc((size_t)cfg->world_size, sizeof *joined);
  if (!joined) {
    close(lfd);
    return attnrt_fail(rt, ATTNRT_ERR_OUT_OF_MEMORY,
                       "rendezvous: out of host memory");
  }
  enum attnrt_status st = ATTNRT_OK;
  int waiting = cfg->world_size - 1;
  while (waiting > 0) {
    int ms = remaining_ms(deadline, 1000);
    if (ms == 0) {
      char missing[256] = "";
      size_t used = 0;
      for (int r = 1, shown = 0; r < cfg->world_size && used + 16 < sizeof missing;
           ++r) {
        if (joined[r])
          continue;
        if (shown++ == 8) {
          used += (size_t)snprintf(missing + used, sizeof missing - used, " ...");
          break;
        }
        used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%d",
                                 shown > 1 ? " " : "", r);
      }
      st = attnrt_fail(rt, ATTNRT_ERR_TIMEOUT,
                       "rendezvous: %d of %d ranks did not connect to rank 0 on "
                       "port %d within %g s (%s); missing ranks: %s",
                       waiting, cfg->world_size - 1, cfg->master_port,
                       cfg->timeout_s, ATTNRT_COMM_TIMEOUT_ENV, missing);
      break;
    }
    struct pollfd pfd = {lfd, POLLIN, 0};
    int ready = poll(&pfd, 1, ms);
    if (ready <= 0)
      continue;
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
      continue;
    if (set_nonblocking(fd) != 0) {
      close(fd);
      continue;
    }
    // A connection that says nothing (a port scanner) must not hold up the
    // job: it gets a few seconds, not the whole timeout.
    double hello_deadline = now_s() + 5.0;
    if (hello_deadline > deadline)
      hello_deadline = deadline;
    unsigned char hello[16];
    if (transfer_all(fd, hello, sizeof hello, false, hello_deadline) != 0 ||
        get_u32(hello) != RDV_MAGIC || get_u32(hello + 4) != RDV_VERSION) {
      close(fd);
      continue;
    }
    uint32_t rank = get_u32(hello + 8), size = get_u32(hello + 12);
    uint32_t code = RDV_OK;
    if (size != (uint32_t)cfg->world_size)
      code = RDV_BAD_SIZE;
    else if (rank == 0 || rank >= size)
      code = RDV_BAD_RANK;
    else if (joined[rank])
      code = RDV_DUPLICATE;
    unsigned char reply[8 + NCCL_ID_BYTES];
    put_u32(reply, RDV_MAGIC);
    put_u32(reply + 4, code);
    memcpy(reply + 8, id->internal, NCCL_ID_BYTES);
    size_t reply_bytes = code == RDV_OK ? sizeof reply : 8;
    int sent = transfer_all(fd, reply, reply_bytes, true, hello_deadline);
    close(fd);
    if (code == RDV_BAD_SIZE) {
      st = attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "rendezvous: rank %u says WORLD_SIZE=%u, rank 0 has %d",
                       rank, size, cfg->world_size);
      break;
    }
    if (code == RDV_BAD_RANK || code == RDV_DUPLICATE) {
      st = attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "rendezvous: %s rank %u connected to rank 0",
                       code == RDV_DUPLICATE ? "a second" : "an invalid", rank);
      break;
    }
    if (sent == 0) {
      joined[rank] = true;
      --waiting;
    }
  }
  free(joined);
  close(lfd);
  return st;
}

/// Tries one connection to a before the deadline. Returns the connected
/// non-blocking descriptor or -1 with errno.
static int connect_once(const struct addrinfo *a, double deadline) {
  int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
  if (fd < 0)
    return -1;
  if (set_nonblocking(fd) != 0)
    goto fail;
  if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
    if (errno != EINPROGRESS)
      goto fail;
    struct pollfd pfd = {fd, POLLOUT, 0};
    int ready = poll(&pfd, 1, remaining_ms(deadline, 2000));
    if (ready <= 0) {
      errno = ready == 0 ? ETIMEDOUT : errno;
      goto fail;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
      goto fail;
    if (err != 0) {
      errno = err;
      goto fail;
    }
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
fail:;
  int saved = errno;
  close(fd);
  errno = saved;
  return -1;
}

enum attnrt_status attnrt_comm_fetch_id(attnrt_runtime *rt,
                                        const struct attnrt_comm_config *cfg,
                                        nccl_unique_id *id, double deadline) {
  char service[16];
  snprintf(service, sizeof service, "%d", cfg->master_port);
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  char last[512] = "no attempt was made";
  double pause = 0.05;
  for (;;) {
    struct addrinfo *list = NULL;
    int gai = getaddrinfo(cfg->master_addr, service, &hints, &list);
    if (gai != 0) {
      snprintf(last, sizeof last, "cannot resolve MASTER_ADDR '%s': %s",
               cfg->master_addr, gai_strerror(gai));
    } else {
      for (struct addrinfo *a = list; a; a = a->ai_next) {
        int fd = connect_once(a, deadline);
        if (fd < 0) {
          snprintf(last, sizeof last, "connect: %s", strerror(errno));
          continue;
        }
        unsigned char hello[16], head[8];
        put_u32(hello, RDV_MAGIC);
        put_u32(hello + 4, RDV_VERSION);
        put_u32(hello + 8, (uint32_t)cfg->rank);
        put_u32(hello + 12, (uint32_t)cfg->world_size);
        int ok = transfer_all(fd, hello, sizeof hello, true, deadline) == 0 &&
                 transfer_all(fd, head, sizeof head, false, deadline) == 0;
        if (!ok) {
          snprintf(last, sizeof last, "talking to rank 0: %s", strerror(errno));
          close(fd);
          continue;
        }
        uint32_t code = get_u32(head + 4);
        if (get_u32(head) != RDV_MAGIC || code != RDV_OK) {
          close(fd);
          freeaddrinfo(list);
          return attnrt_fail(
              rt, ATTNRT_ERR_INVALID_ARGUMENT,
              "rendezvous: rank 0 at %s:%d refused rank %d: %s", cfg->master_addr,
              cfg->master_port, cfg->rank,
              get_u32(head) != RDV_MAGIC ? "not an attnrt rendezvous"
              : code == RDV_BAD_SIZE     ? "WORLD_SIZE differs"
              : code == RDV_DUPLICATE    ? "another process has the same RANK"
                                         : "invalid RANK");
        }
        ok = transfer_all(fd, id->internal, NCCL_ID_BYTES, false, deadline) == 0;
        int saved = errno;
        close(fd);
        if (ok) {
          freeaddrinfo(list);
          return ATTNRT_OK;
        }
        snprintf(last, sizeof last, "reading the id: %s", strerror(saved));
      }
      freeaddrinfo(list);
    }
    double left = deadline - now_s();
    if (left <= 0)
      break;
    sleep_s(pause < left ? pause : left);
    if (pause < 1.0)
      pause *= 2;
  }
  return attnrt_fail(rt, ATTNRT_ERR_TIMEOUT,
                     "rendezvous: rank %d could not get the NCCL id from rank 0 "
                     "at %s:%d within %g s (%s); last error: %s",
                     cfg->rank, cfg->master_addr, cfg->master_port, cfg->timeout_s,
                     ATTNRT_COMM_TIMEOUT_ENV, last);
}
