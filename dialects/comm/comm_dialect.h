//===- comm_dialect.h - Op names of the comm dialect ----------------------===//
#ifndef ATTN_COMM_DIALECT_H
#define ATTN_COMM_DIALECT_H

#include "dialects/dialects.h"

#define ATTN_OP_COMM_ALL_REDUCE "comm.all_reduce"
#define ATTN_OP_COMM_ALL_GATHER "comm.all_gather"
#define ATTN_OP_COMM_REDUCE_SCATTER "comm.reduce_scatter"
#define ATTN_OP_COMM_ALL_TO_ALL "comm.all_to_all"

#endif // ATTN_COMM_DIALECT_H
