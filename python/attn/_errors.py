"""The errors attn raises: attn.Error, its CompileError (with the compiler's
Diagnostics) and RuntimeError. Re-exported by attn, whose name they carry."""
import builtins
import collections


class Error(Exception):
    """Base of the errors attn raises."""


class Diagnostic(collections.namedtuple("Diagnostic", "severity file line col message")):
    """One compiler diagnostic; str() gives `file:line:col: severity: message`."""

    def __str__(self):
        loc = "%s:%d:%d: " % (self.file, self.line, self.col) if self.file else ""
        return "%s%s: %s" % (loc, self.severity, self.message)


class CompileError(Error):
    """The compiler rejected the program. .diagnostics lists what it said,
    .program is the IR text, .status the C API's status name."""

    def __init__(self, status, diagnostics, program, source_name):
        self.status = status
        self.diagnostics = list(diagnostics)
        self.program = program
        lines = []
        src = program.splitlines() if program else []
        for d in self.diagnostics:
            if d.severity == "note" and d.message.startswith("see current operation"):
                continue
            lines.append(str(d))
            if d.file == source_name and 1 <= d.line <= len(src):
                lines.append("    " + src[d.line - 1])
        if not lines:
            lines.append("error: " + status)
        super().__init__("\n".join(lines))


class RuntimeError(Error, builtins.RuntimeError):
    """Loading or running a compiled kernel failed (no GPU, driver errors)."""


# Named attn.<name> (tracebacks, repr, pickling), as when they lived in attn.
for _cls in (Error, Diagnostic, CompileError, RuntimeError):
    _cls.__module__ = "attn"
del _cls
