#!/usr/bin/env python3
"""Runs one process per rank with torchrun's variables, like bench/run_comm_bench.sh.

    launch_ranks.py [--world=N] [--timeout=S] PROGRAM [ARGS...]

Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR
and a free MASTER_PORT on top of this environment. Prints every rank's
output, each line prefixed with "[rN] ", ranks in order; exits with the
first non-zero status (or 124 when the timeout kills them).
"""
import os
import socket
import subprocess
import sys


def main():
    args = sys.argv[1:]
    world, timeout = 2, 120.0
    while args and args[0].startswith("--"):
        key, _, value = args.pop(0).partition("=")
        if key == "--world":
            world = int(value)
        elif key == "--timeout":
            timeout = float(value)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(world):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(r),
                   LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    status = 0
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, _ = p.communicate()
            p.returncode = 124
        outs.append(out.decode(errors="replace"))
        if p.returncode and not status:
            status = p.returncode
    for r, out in enumerate(outs):
        for line in out.splitlines():
            print(f"[r{r}] {line}")
    return status


if __name__ == "__main__":
    sys.exit(main())
