#!/bin/bash
# boot.sh FLAVOUR MODE: boot build/FLAVOUR/bzImage with the guest initramfs
# in QEMU (software emulation, two CPUs, two fake NUMA nodes) and run MODE
# (test, bench, demo, shell). Console log and results land in
# build/logs/FLAVOUR-MODE/{console,ktap}.log.
# ICOUNT=1 makes guest time a function of instructions executed (bench);
# SMP sets the number of guest CPUs (default 2); QEMU_ARCH=i386 boots with
# qemu-system-i386 (make matrix's 32-bit kernel), default x86_64.
# In test mode the guest has two 128 MiB pc-dimm devices besides its RAM,
# left offline by the guest kernel until a test onlines them and ejects
# them again through ACPI (tests/ksm_hotremove.c: memory hot-remove).
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
qemu=("qemu-system-${QEMU_ARCH:-x86_64}" -smp "${SMP:-2}" -nographic -no-reboot
      -kernel "$kernel" -initrd "$initrd")
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
	qemu+=(-m "$mem" -monitor none -serial mon:stdio -serial "$serial2"
	       -append "$append quiet")
	exec "${qemu[@]}" ;;
*)
	qemu+=(-serial "file:$logs/console.log" -serial "file:$logs/ktap.log")
	if [ "$mode" = test ] && [ "${QEMU_ARCH:-x86_64}" = x86_64 ]; then
		# slab_nomerge: the KSM caches show in /proc/slabinfo under
		# their own names (tests/ksm_faults.c counts their objects).
		qemu+=(-append "$append slab_nomerge" -m "$mem,slots=2,maxmem=4G"
		       -monitor none)
		for d in dimm0 dimm1; do
			qemu+=(-object "memory-backend-ram,id=mem-$d,size=128M"
			       -device "pc-dimm,id=$d,memdev=mem-$d")
		done
	else
		qemu+=(-append "$append" -m "$mem" -monitor none)
	fi
	note "booting $flavour ($mode), logs in $logs"
	rc=0
	timeout "$limit" "${qemu[@]}" </dev/null || rc=$?
	[ "$rc" = 124 ] && echo "boot: guest timed out after ${limit}s" >&2
	exit 0 ;;
esac
