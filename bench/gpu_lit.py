#!/usr/bin/env python3
"""The GPU lit tests (test/GPU/*.test, test/python/*cuda*.test) on the GPU
machine, which has neither lit nor FileCheck (docs/testing.md): runs each
file's RUN lines with %s, %S, %t, %attn_python, %attn_lib and attn-run
(CARRY's, default .carry) substituted and `not` dropped, and replaces
FileCheck by an in-order search of the prefix's CHECK, -NEXT, -SAME,
-LABEL, -DAG and -COUNT-n lines ({{regex}} kept, [[vars]] matched by
anything, -NOT lines skipped): weaker than FileCheck (no line adjacency,
no NOT), so a pass here is a smoke check, a failure a real one.

  CARRY=.carry python3 bench/gpu_lit.py test/GPU/grad-captures.test ...

Exit status 1 when any RUN line fails or any check is not found."""
import os, re, subprocess, sys, tempfile

def filecheck(src, prefixes, text):
    pats = []
    for line in open(src):
        m = re.search(r"(?:^|\s)(?:#|//)?\s*([A-Z0-9_-]+?)(-NEXT|-SAME|-DAG|-LABEL|-NOT|-COUNT-\d+)?:\s(.*)$", line)
        if not m or m.group(1) not in prefixes or m.group(2) == "-NOT":
            continue
        body = m.group(3).rstrip()
        rx = ""
        for part in re.split(r"(\{\{.*?\}\}|\[\[.*?\]\])", body):
            if part.startswith("{{"):
                rx += "(?:%s)" % part[2:-2]
            elif part.startswith("[["):
                rx += ".*?"
            else:
                rx += re.escape(part)
        n = int(m.group(2)[7:]) if m.group(2) and m.group(2).startswith("-COUNT") else 1
        pats += [(rx, body)] * n
    pos = 0
    for rx, body in pats:
        mm = re.compile(rx).search(text, pos)
        if not mm:
            return "no match for: %s" % body
        pos = mm.end()
    return None

def main(path, carry):
    d = os.path.dirname(os.path.abspath(path))
    tmp = tempfile.mkdtemp()
    ok = True
    for line in open(path):
        m = re.search(r"RUN:\s(.*)$", line)
        if not m:
            continue
        cmd = re.sub(r"(^|\s)not\s", r"\1", m.group(1).rstrip())
        cmd = cmd.replace("%attn_python", "python3").replace("%S", d).replace("%s", path).replace("%t", tmp + "/t").replace("%attn_lib", carry + "/lib")
        cmd = re.sub(r"(?<![\w/.-])attn-run\b", carry + "/bin/attn-run", cmd)
        fc = re.search(r"\|\s*FileCheck\s+(\S+)(.*)$", cmd)
        if fc:
            pre = re.search(r"--check-prefix(?:es)?=(\S+)", fc.group(2))
            prefixes = pre.group(1).split(",") if pre else ["CHECK"]
            run = cmd[:fc.start()]
            p = subprocess.run(run, shell=True, capture_output=True, text=True)
            err = filecheck(path, prefixes, p.stdout)
            status = "ok" if err is None else "FAIL: " + err
            if err:
                ok = False
                sys.stdout.write(p.stdout[-3000:] + p.stderr[-2000:])
            print("%s [%s] %s" % (os.path.basename(path), ",".join(prefixes), status))
        else:
            p = subprocess.run(cmd, shell=True, capture_output=True, text=True)
            if p.returncode and not cmd.startswith("not "):
                ok = False
                print("%s: '%s' exit %d\n%s" % (os.path.basename(path), cmd[:80], p.returncode, p.stderr[-2000:]))
    return 0 if ok else 1

if __name__ == "__main__":
    rc = 0
    for f in sys.argv[1:]:
        rc |= main(f, os.environ.get("CARRY", ".carry"))
    sys.exit(rc)
