// nccl_shim_ptx.h - the PTX declarations of every function of the NCCL device shim (runtime/nccl/attn_nccl_device.cu), as a kernel that calls them writes them; the tests that link kernels with the shim (link_test.c, comm_gpu_test.c) share them.

#ifndef ATTNRT_NCCL_SHIM_PTX_H
#define ATTNRT_NCCL_SHIM_PTX_H

#define NCCL_SHIM_PTX_DECLS \
    ".extern .func (.param .b64 r) attn_nccl_peer_ptr(.param .b64 a, .param .b64 b, " \
    ".param .b64 c, .param .b32 d);\n" \
    ".extern .func (.param .b32 r) attn_nccl_rank(.param .b64 a);\n" \
    ".extern .func (.param .b32 r) attn_nccl_size(.param .b64 a);\n" \
    ".extern .func (.param .b32 r) attn_nccl_lsa_rank(.param .b64 a);\n" \
    ".extern .func (.param .b32 r) attn_nccl_lsa_size(.param .b64 a);\n" \
    ".extern .func attn_nccl_lsa_barrier_arrive(.param .b64 a, .param .b32 b);\n" \
    ".extern .func attn_nccl_lsa_barrier_wait(.param .b64 a, .param .b32 b);\n" \
    ".extern .func attn_nccl_lsa_barrier_sync(.param .b64 a, .param .b32 b);\n" \
  ""

#endif // ATTNRT_NCCL_SHIM_PTX_H
