#!/usr/bin/env python3
"""profile-report.py SYSTEM.MAP KTAP.LOG: the bench's kernel profiles by function.

Each "profile SPAN ADDR HITS" line of the log (bench/ksm_bench.c) is a
bucket of kernel text and its timer-tick samples; this prints, for each
span, the functions with the most samples and their share of the span's.
"""
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ksyms import Ksyms  # noqa: E402

TOP = int(os.environ.get("TOP", "25"))


def main():
    syms = Ksyms(sys.argv[1])
    spans = collections.OrderedDict()
    with open(sys.argv[2], errors='replace') as log:
        for line in log:
            words = line.split()
            if len(words) != 4 or words[0] != 'profile':
                continue
            found = syms.find(int(words[2], 16))
            fn = found[0] if found else '?'
            per_fn = spans.setdefault(words[1], collections.Counter())
            per_fn[fn] += int(words[3])
    for span, per_fn in spans.items():
        total = sum(per_fn.values())
        print('%s: %d samples' % (span, total))
        for fn, hits in per_fn.most_common(TOP):
            print('  %6.2f%% %7d  %s' % (100.0 * hits / total, hits, fn))
        print()


if __name__ == '__main__':
    main()
