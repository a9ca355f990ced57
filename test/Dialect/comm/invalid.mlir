// RUN: attn-opt %s --split-input-file --verify-diagnostics

// IRDL: a required attribute is missing.
func.func @all_reduce_missing_world_size(%x: tensor<16xf32>) {
  // expected-error@+1 {{attribute "world_size" is expected but not provided}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum"} : (tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

// IRDL: wrong number of operands.
func.func @all_gather_two_operands(%x: tensor<16xf32>) {
  // expected-error@+1 {{expects exactly 1 operands, but got 2}}
  %0 = "comm.all_gather"(%x, %x) {dim = 0 : i64, world_size = 2 : i64} : (tensor<16xf32>, tensor<16xf32>) -> tensor<32xf32>
  return
}

// -----

// IRDL: an attribute of the wrong kind.
func.func @reduce_scatter_integer_reduction(%x: tensor<16xf32>) {
  // expected-error@+1 {{expected base attribute 'builtin.string' but got 'builtin.integer'}}
  %0 = "comm.reduce_scatter"(%x) {dim = 0 : i64, reduction = 0 : i64, world_size = 2 : i64} : (tensor<16xf32>) -> tensor<8xf32>
  return
}

// -----

// IRDL: all_reduce binds operand and result to one type.
func.func @all_reduce_result_type(%x: tensor<16xf32>) {
  // expected-error@+1 {{expected 'tensor<16xf32>' but got 'tensor<16xf16>'}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 2 : i64} : (tensor<16xf32>) -> tensor<16xf16>
  return
}

// -----

func.func @world_size_zero(%x: tensor<16xf32>) {
  // expected-error@+1 {{world_size must be positive, found 0}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 0 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

// Regression: a boolean world_size passes IRDL's integer constraint and used
// to skip every check of the op.
func.func @world_size_bool(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{world_size must be an integer, found a boolean}}
  %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = true} : (tensor<4x8xf32>) -> tensor<5x8xf32>
  return
}

// -----

func.func @operand_dynamic(%x: tensor<?x8xf32>) {
  // expected-error@+1 {{operand must be a static tensor of rank at least 1, found tensor<?x8xf32>}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 2 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

// Regression: this used to read "operand must be a statically shaped tensor"
// although tensor<f32> is one.
func.func @operand_rank0(%x: tensor<f32>) {
  // expected-error@+1 {{operand must be a static tensor of rank at least 1, found tensor<f32>}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 2 : i64} : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @all_gather_result_rank(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result must be a static tensor of rank 2, found tensor<64xf32>}}
  %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<64xf32>
  return
}

// -----

func.func @all_to_all_result_dynamic(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result must be a static tensor of rank 2, found tensor<?x8xf32>}}
  %0 = "comm.all_to_all"(%x) {split_dim = 0 : i64, concat_dim = 1 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @all_gather_elem_mismatch(%x: tensor<4x8xf16>) {
  // expected-error@+1 {{operand and result element types differ}}
  %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = 2 : i64} : (tensor<4x8xf16>) -> tensor<8x8xf32>
  return
}

// -----

func.func @all_reduce_unknown_reduction(%x: tensor<16xf32>) {
  // expected-error@+1 {{unknown reduction 'mean' (expected sum, prod, max, min or avg)}}
  %0 = "comm.all_reduce"(%x) {reduction = "mean", world_size = 2 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @reduce_scatter_unknown_reduction(%x: tensor<16xf32>) {
  // expected-error@+1 {{unknown reduction 'SUM' (expected sum, prod, max, min or avg)}}
  %0 = "comm.reduce_scatter"(%x) {dim = 0 : i64, reduction = "SUM", world_size = 2 : i64} : (tensor<16xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @all_gather_dim_out_of_range(%x: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{dim 4 is out of range for rank 4}}
  %0 = "comm.all_gather"(%x) {dim = 4 : i64, world_size = 2 : i64} : (tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @reduce_scatter_dim_negative(%x: tensor<8x8xf32>) {
  // expected-error@+1 {{dim -1 is out of range for rank 2}}
  %0 = "comm.reduce_scatter"(%x) {dim = -1 : i64, reduction = "sum", world_size = 2 : i64} : (tensor<8x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

// Regression: a boolean dim failed verification without any diagnostic.
func.func @all_gather_dim_bool(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{dim must be an integer, found a boolean}}
  %0 = "comm.all_gather"(%x) {dim = true, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @all_to_all_split_dim_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{split_dim 2 is out of range for rank 2}}
  %0 = "comm.all_to_all"(%x) {split_dim = 2 : i64, concat_dim = 0 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @all_to_all_concat_dim_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{concat_dim 5 is out of range for rank 2}}
  %0 = "comm.all_to_all"(%x) {split_dim = 0 : i64, concat_dim = 5 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @all_to_all_concat_dim_bool(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{concat_dim must be an integer, found a boolean}}
  %0 = "comm.all_to_all"(%x) {split_dim = 0 : i64, concat_dim = false, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @all_gather_gathered_dim(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result dim 0 must be 16, found 8}}
  %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = 4 : i64} : (tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @all_gather_other_dim(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result dim 1 must be 8, found 16}}
  %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @reduce_scatter_not_divisible(%x: tensor<6x8xf32>) {
  // expected-error@+1 {{dim 0 of size 6 is not divisible by world_size 4}}
  %0 = "comm.reduce_scatter"(%x) {dim = 0 : i64, reduction = "sum", world_size = 4 : i64} : (tensor<6x8xf32>) -> tensor<1x8xf32>
  return
}

// -----

func.func @reduce_scatter_scattered_dim(%x: tensor<8x8xf32>) {
  // expected-error@+1 {{result dim 1 must be 4, found 8}}
  %0 = "comm.reduce_scatter"(%x) {dim = 1 : i64, reduction = "avg", world_size = 2 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @all_to_all_not_divisible(%x: tensor<2x6x16xf32>) {
  // expected-error@+1 {{split dim 1 of size 6 is not divisible by world_size 4}}
  %0 = "comm.all_to_all"(%x) {split_dim = 1 : i64, concat_dim = 2 : i64, world_size = 4 : i64} : (tensor<2x6x16xf32>) -> tensor<2x1x64xf32>
  return
}

// -----

// Regression: with split_dim == concat_dim the split was not checked, so a
// dim of 3 was "split" over 2 ranks.
func.func @all_to_all_same_dim_not_divisible(%x: tensor<3x8xf32>) {
  // expected-error@+1 {{split dim 0 of size 3 is not divisible by world_size 2}}
  %0 = "comm.all_to_all"(%x) {split_dim = 0 : i64, concat_dim = 0 : i64, world_size = 2 : i64} : (tensor<3x8xf32>) -> tensor<3x8xf32>
  return
}

// -----

func.func @all_to_all_concat_size(%x: tensor<2x8x16xf32>) {
  // expected-error@+1 {{result dim 2 must be 64, found 16}}
  %0 = "comm.all_to_all"(%x) {split_dim = 1 : i64, concat_dim = 2 : i64, world_size = 4 : i64} : (tensor<2x8x16xf32>) -> tensor<2x2x16xf32>
  return
}

// -----

func.func @all_to_all_split_size(%x: tensor<2x8x16xf32>) {
  // expected-error@+1 {{result dim 1 must be 2, found 8}}
  %0 = "comm.all_to_all"(%x) {split_dim = 1 : i64, concat_dim = 2 : i64, world_size = 4 : i64} : (tensor<2x8x16xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @all_to_all_same_dim_resized(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result dim 0 must be 4, found 8}}
  %0 = "comm.all_to_all"(%x) {split_dim = 0 : i64, concat_dim = 0 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}
