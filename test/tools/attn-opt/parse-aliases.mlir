// RUN: attn-opt %s | FileCheck %s
// RUN: attn-opt %s -o - | attn-opt | FileCheck %s

// Attribute and type aliases stay in front of the module attn-opt wraps
// around top-level ops (they used to land inside it: "expected operation
// name in quotes").

// CHECK:      #[[MAP:.*]] = affine_map<(d0) -> (d0)>
// CHECK-NEXT: module {
// CHECK-LABEL:  func.func @uses_aliases
// CHECK-SAME:     attributes {m = #[[MAP]], s = "// not a comment"}
#map = affine_map<(d0) -> (d0)> // a trailing comment
!i = i32
#set = affine_set<(d0) : (d0 >= 0,
                         -d0 + 10 >= 0)>
func.func @uses_aliases(%a: !i) -> !i attributes {m = #map, s = "// not a comment"} {
  return %a : !i
}
