#!/bin/bash
# symbolize.sh FLAVOUR [LOG]: name the kernel text addresses in a guest log
# (the test kernel has no kallsyms) from the build's System.map.
set -euo pipefail
. "$(dirname "$0")/common.sh"

flavour=${1:-ksm}
log=${2:-$BUILD/logs/$flavour-test/console.log}
map=$(src_of "$flavour")/obj-$flavour/System.map
[ -f "$map" ] || die "no $map"
python3 - "$map" "$log" "$(dirname "$0")" <<'PY'
import re, sys
sys.path.insert(0, sys.argv[3])
from ksyms import Ksyms
syms = Ksyms(sys.argv[1])
text = open(sys.argv[2], errors='replace').read()
for m in sorted(set(re.findall(r'0xffffffff8[0-9a-f]{7}', text))):
    name, off = syms.find(int(m, 16))
    print(m, '%s+0x%x' % (name, off))
PY
