// A valid module for tests about the command line.
func.func @ok() {
  return
}
