"""matplotlib for the bench scripts' charts, where it is installed
(Debian: python3-matplotlib): pyplot("tool") returns matplotlib.pyplot on
the Agg backend, or None after a line on stderr saying no charts."""
import sys


def pyplot(tool):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("%s: matplotlib not found, no charts" % tool, file=sys.stderr)
        return None
    return plt
