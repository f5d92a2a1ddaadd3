#!/bin/bash
# boot.sh FLAVOUR MODE: boot build/FLAVOUR/bzImage with the guest initramfs
# in QEMU (software emulation, two CPUs, two fake NUMA nodes) and run MODE
# (test, bench, demo, shell). Console log and results land in
# build/logs/FLAVOUR-MODE/{console,ktap}.log.
# ICOUNT=1 makes guest time a function of instructions executed (bench);
# SMP sets the number of guest CPUs (default 2).
set -euo pipefail
. "$(dirname "$0")/common.sh"

flavour=${1:?usage: boot.sh FLAVOUR MODE}
mode=${2:?usage: boot.sh FLAVOUR MODE}
kernel=$BUILD/$flavour/bzImage
initrd=$GUEST/initramfs.cpio.gz
[ -f "$kernel" ] || die "$kernel missing: make kernel"
[ -f "$initrd" ] || die "$initrd missing: make guest"

logs=${LOGS:-$BUILD/logs/$flavour-$mode}
mkdir -p "$logs"
rm -f "$logs/console.log" "$logs/ktap.log"

mem=${MEM:-2G}
limit=${TIMEOUT:-1500}
append="console=ttyS0 numa=fake=2 panic=-1 samepage.mode=$mode ${APPEND:-}"
qemu=(qemu-system-x86_64 -m "$mem" -smp "${SMP:-2}" -nographic -no-reboot
      -kernel "$kernel" -initrd "$initrd" -monitor none)
if [ "${ICOUNT:-0}" = 1 ]; then
	qemu+=(-icount shift=4,sleep=off)
fi

case $mode in
demo|shell)
	# The demo's ksmtop --json snapshots come out of the second serial
	# port into demo.jsonl, for scripts/demo-plot.sh.
	serial2=null
	if [ "$mode" = demo ]; then
		rm -f "$logs/demo.jsonl"
		serial2=file:$logs/demo.jsonl
	fi
	qemu+=(-serial mon:stdio -serial "$serial2" -append "$append quiet")
	exec "${qemu[@]}" ;;
*)
	qemu+=(-serial "file:$logs/console.log" -serial "file:$logs/ktap.log"
	       -append "$append")
	note "booting $flavour ($mode), logs in $logs"
	rc=0
	timeout "$limit" "${qemu[@]}" </dev/null || rc=$?
	[ "$rc" = 124 ] && echo "boot: guest timed out after ${limit}s" >&2
	exit 0 ;;
esac
