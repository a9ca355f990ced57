// RUN: attn-opt %s --split-input-file --verify-diagnostics --lower-tile-to-hopper

// lower-tile-to-hopper moves attn-tile's launch programs (tile.programs)
// into the gpu.module (launch_programs.c). Entries that are not programs,
// or that run another program with the wrong number of arguments, are an
// error on the module, not a crash.

// expected-error@+1 {{tile.programs entry 0 is not a launch program (name, inputs, workspace, steps of kernel and args)}}
module attributes {tile.programs = [1]} {
}

// -----

// expected-error@+1 {{tile.programs entry 0 is not a launch program}}
module attributes {tile.programs = [{name = "x"}]} {
}

// -----

// expected-error@+1 {{tile.programs entry 1 is not a launch program}}
module attributes {tile.programs = [{name = "x", inputs = ["a"], workspace = [], steps = []}, {name = "y", inputs = ["a"], workspace = [], steps = [{kernel = 3, args = ["a"]}]}]} {
}

// -----

// expected-error@+1 {{tile.programs entry 0: step 0 runs a program with another number of inputs than it has args}}
module attributes {gpu.container_module, tile.programs = [{name = "layer", inputs = ["q"], workspace = [], steps = [{kernel = "inner", args = ["q"]}]}]} {
  gpu.module @attn_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">] attributes {attn.programs = [{name = "inner", inputs = ["q", "k"], workspace = [], steps = [{kernel = "inner__attn", args = ["q", "k"]}]}]} {
  }
}

// -----

// expected-error@+1 {{attn.programs entry 0 is not a launch program}}
module attributes {gpu.container_module, tile.programs = [{name = "layer", inputs = ["q"], workspace = [], steps = []}]} {
  gpu.module @attn_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">] attributes {attn.programs = [{name = "inner"}]} {
  }
}
