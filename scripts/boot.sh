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
# them again through ACPI (tests/ksm_hotremove.c: memory hot-remove). Its
# NUMA nodes are then QEMU's: 0 and 1 share the RAM and the CPUs, and the
# DIMMs form node 2, which has no memory at boot: so the kernel's own
# allocations, which stay on the nodes of the CPUs, leave a DIMM onlined
# as kernel memory free to go offline again. Other modes fake two nodes.
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

# numa_nodes MEM CPUS: QEMU options for nodes 0 and 1, each with half of
# MEM (a size in M or G) and of the CPUs, and node 2 without memory.
numa_nodes() {
	local mib half cpus=$2
	case $1 in
	*G) mib=$((${1%G} * 1024)) ;;
	*M) mib=${1%M} ;;
	*) die "MEM=$1: give it in M or G" ;;
	esac
	half=$((mib / 2))
	echo "-object memory-backend-ram,id=ram0,size=${half}M"
	echo "-object memory-backend-ram,id=ram1,size=$((mib - half))M"
	if [ "$cpus" -ge 2 ]; then
		echo "-numa node,nodeid=0,cpus=0-$((cpus / 2 - 1)),memdev=ram0"
		echo "-numa node,nodeid=1,cpus=$((cpus / 2))-$((cpus - 1)),memdev=ram1"
	else
		echo "-numa node,nodeid=0,cpus=0,memdev=ram0"
		echo "-numa node,nodeid=1,memdev=ram1"
	fi
	echo "-numa node,nodeid=2"
}
limit=${TIMEOUT:-1500}
append="console=ttyS0 panic=-1 samepage.mode=$mode ${APPEND:-}"
# Two sockets for two or more CPUs, one a NUMA node (numa_nodes below): a
# kernel with scheduler domains for shared caches (Debian's) warns at boot
# when a cache spans two nodes, as one socket's would.
smp=${SMP:-2}
[ "$smp" -ge 2 ] && [ $((smp % 2)) = 0 ] && smp="$smp,sockets=2"
qemu=("qemu-system-${QEMU_ARCH:-x86_64}" -smp "$smp" -nographic -no-reboot
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
		# memhp_default_state=offline: the DIMMs stay offline until
		# tests/ksm_hotremove.c onlines them as it needs, as the test
		# config's default has it; Debian's onlines them at boot, into
		# ZONE_NORMAL, where kernel allocations then keep them busy.
		qemu+=(-append "$append slab_nomerge memhp_default_state=offline"
		       -m "$mem,slots=2,maxmem=4G"
		       -monitor none)
		qemu+=($(numa_nodes "$mem" "${SMP:-2}"))
		for d in dimm0 dimm1; do
			qemu+=(-object "memory-backend-ram,id=mem-$d,size=128M"
			       -device "pc-dimm,id=$d,memdev=mem-$d,node=2")
		done
	else
		qemu+=(-append "$append numa=fake=2" -m "$mem" -monitor none)
	fi
	note "booting $flavour ($mode), logs in $logs"
	rc=0
	timeout "$limit" "${qemu[@]}" </dev/null || rc=$?
	[ "$rc" = 124 ] && echo "boot: guest timed out after ${limit}s" >&2
	exit 0 ;;
esac
