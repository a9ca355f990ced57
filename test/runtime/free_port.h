// free_port.h - a loopback TCP port for the communicator tests' rendezvous
// (comm_test.c, comm_gpu_test.c).

#ifndef ATTNRT_FREE_PORT_H
#define ATTNRT_FREE_PORT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/// A TCP port that was free a moment ago (bound to port 0, then released),
/// or fallback when the system gives none.
static inline int free_port(int fallback) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return fallback;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = fallback;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

#endif // ATTNRT_FREE_PORT_H
