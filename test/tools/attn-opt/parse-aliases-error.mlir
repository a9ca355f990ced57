// RUN: not attn-opt %s 2>&1 >/dev/null | FileCheck %s
#map = affine_map<(d0) -> (d0)>
// CHECK: parse-aliases-error.mlir:[[@LINE+1]]:47: error: undefined symbol alias id 'nope'
func.func @f() attributes {m = #map, n = #nope} {
  return
}

// An op after aliases keeps its line and column although attn-opt puts
// `module {` in front of it (here: before the comment line above it).
