// A syntax error on line 3, column 13, for tests reading it from stdin.
func.func @broken(%a: i32) -> i32 {
  return %a, : i32
}
