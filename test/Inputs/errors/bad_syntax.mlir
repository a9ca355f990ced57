// Input of error tests: %b is not defined.
func.func @f(%a: f32) -> f32 {
  return %b : f32
}
