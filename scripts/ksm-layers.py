#!/usr/bin/env python3
"""ksm-layers.py DIR: the call graph between the files of mm/ksm/.

For each .c file of DIR, which other files' non-static functions and
variables it names (in code, comments stripped). Prints one line a file,
"file -> callee, ...", in an order where every file comes after those it
uses. Exits 1 naming a cycle if there is one, or a file whose header does
not say truly which files it calls into ("Layering (see samepage.h):
calls into a.c, b.c." or "calls into no other file of mm/ksm/."). Used by
export-series.sh, so that a new cycle or a stale header fails make test.
"""
import glob
import os
import re
import sys


def strip(src):
    src = re.sub(r'/\*.*?\*/', ' ', src, flags=re.S)
    src = re.sub(r'//[^\n]*', ' ', src)
    return re.sub(r'"(\\.|[^"\\])*"', '""', src)


def definitions(src):
    """Names a file defines for the others: functions and variables."""
    names = set()
    for m in re.finditer(r'^(?!static\b|extern\b|#)[A-Za-z_][^;{()=\n]*?'
                         r'\b(sp_\w+|ksm_\w+|__ksm_\w+)\s*(\(|=|;|\[)',
                         src, re.M):
        names.add(m.group(1))
    for m in re.finditer(r'^DEFINE_\w+\((sp_\w+)', src, re.M):
        names.add(m.group(1))
    for m in re.finditer(r'^(?:LIST_HEAD|DECLARE_WAIT_QUEUE_HEAD)\((sp_\w+)',
                         src, re.M):
        names.add(m.group(1))
    return names


def main():
    d = sys.argv[1]
    files = sorted(os.path.basename(f) for f in glob.glob(d + '/*.c'))
    srcs = {f: strip(open(os.path.join(d, f)).read()) for f in files}
    owner = {}
    for f in files:
        for n in definitions(srcs[f]):
            owner.setdefault(n, f)
    uses = {f: set() for f in files}
    for f in files:
        for w in set(re.findall(r'\b(?:sp|ksm|__ksm)_\w+\b', srcs[f])):
            o = owner.get(w)
            if o and o != f:
                uses[f].add(o)
    order, state = [], {}

    def visit(f, path):
        if state.get(f) == 'done':
            return
        if state.get(f) == 'open':
            cyc = path[path.index(f):] + [f]
            print('cycle: ' + ' -> '.join(cyc))
            sys.exit(1)
        state[f] = 'open'
        for g in sorted(uses[f]):
            visit(g, path + [f])
        state[f] = 'done'
        order.append(f)

    for f in files:
        visit(f, [])
    bad = 0
    for f in order:
        print('%s -> %s' % (f, ', '.join(sorted(uses[f])) or '-'))
        said = header_says(open(os.path.join(d, f)).read())
        if said is not None and said != uses[f]:
            print('%s: its header says it calls into %s' %
                  (f, ', '.join(sorted(said)) or 'no other file'))
            bad = 1
    sys.exit(bad)


def header_says(src):
    """The files a file's header says it calls into, or None."""
    m = re.search(r'Layering \(see samepage\.h\): calls into (.*?)\.\n',
                  re.sub(r'\n \* ', ' ', src.split('*/', 1)[0]) + '\n',
                  re.S)
    if not m:
        return None
    if m.group(1).startswith('no other file'):
        return set()
    return set(x.strip() for x in m.group(1).split(','))


if __name__ == '__main__':
    main()
