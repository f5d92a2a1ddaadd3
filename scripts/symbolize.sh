#!/bin/bash
# symbolize.sh FLAVOUR [LOG]: name the kernel text addresses in a guest log
# (the test kernel has no kallsyms) from the build's System.map.
set -euo pipefail
. "$(dirname "$0")/common.sh"

flavour=${1:-ksm}
log=${2:-$BUILD/logs/$flavour-test/console.log}
map=$(src_of "$flavour")/obj-$flavour/System.map
[ -f "$map" ] || die "no $map"
python3 - "$map" "$log" <<'PY'
import bisect, re, sys
syms = []
for line in open(sys.argv[1]):
    a, t, n = line.split()[:3]
    if t in 'tTwW':
        syms.append((int(a, 16), n))
syms.sort()
keys = [a for a, _ in syms]
text = open(sys.argv[2], errors='replace').read()
for m in sorted(set(re.findall(r'0xffffffff8[0-9a-f]{7}', text))):
    a = int(m, 16)
    i = bisect.bisect_right(keys, a) - 1
    print(m, '%s+0x%x' % (syms[i][1], a - syms[i][0]))
PY
