# Turns a text file into a C source defining `const char NAME[]` (NUL-terminated),
# so tools carry their IRDL and never depend on install paths.
# Usage: cmake -DINPUT=f -DOUTPUT=f.c -DNAME=sym -P embed.cmake
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" hex "${hex}")
file(WRITE "${OUTPUT}"
  "/* Generated from ${INPUT} by cmake/embed.cmake; do not edit. */\n"
  "const char ${NAME}[] = {\n${hex}0x00};\n")
