#!/bin/bash
# rt-latency.sh [NAME]: what ksmd costs a real-time task on a PREEMPT_RT
# kernel, ours beside stock. Both trees are built under the Debian
# configuration kernel/config/matrix/NAME.config (default debian-rt:
# Debian's rt-amd64), and each boots the plan tests/plan-rtlat
# (tests/ksm_rtlat.c: a SCHED_FIFO probe on ksmd's CPU while KSM merges,
# unmerges and migrates a widely shared KSM page). Prints one table row a
# phase: worst and 99.9th percentile wake-up latency on each kernel.
# RUNS=N boots each kernel N times (default 1), alternating, and reports
# each phase's worst and its median p99.9 over the runs.
#
# MODE=icount (the default) boots one CPU under -icount (scripts/boot.sh
# ICOUNT=1): guest time counts instructions, so what the probe sees is
# the kernel's own work between the timer and the wake-up, the same from
# run to run and free of the host's load; the probe shares the CPU with
# ksmd, the unmerging and the migration. MODE=wall boots two CPUs in
# real time: the emulation's own jitter (the idle row) is then of the
# order of the figures.
#
# Fails when a test fails, or when our worst in a phase exceeds both
# stock's worst there and the idle floor (the larger idle worst of the
# two kernels). Logs in build/logs/rt-latency/MODE/. Not part of make
# test (two cold builds of a Debian kernel, about 25 minutes each here).
#
# APPEND="PARAMS" boots both kernels with more parameters, for instance
# rcu_nocbs=0, which offloads RCU's callbacks from the probe's CPU as
# real-time hosts do for their latency-critical CPUs; logs then go to
# build/logs/rt-latency/MODE-PARAMS/.
set -euo pipefail
. "$(dirname "$0")/common.sh"

name=${1:-debian-rt}
runs=${RUNS:-1}
mode=${MODE:-icount}
guest=$BUILD/guest-rtlat
out=$BUILD/logs/rt-latency/$mode
[ -z "${APPEND:-}" ] || out=$out-$(printf '%s' "$APPEND" | tr -cs 'a-zA-Z0-9=,.' '_')
mkdir -p "$out"
case $mode in
icount) export ICOUNT=1 SMP=1 ;;
wall) export ICOUNT=0 SMP=2 ;;
*) die "MODE is icount or wall, not '$mode'" ;;
esac

"$TOP/scripts/build-kernel.sh" "matrix-$name"
"$TOP/scripts/build-kernel.sh" "stock-matrix-$name"
GUEST=$guest PLAN=$TOP/tests/plan-rtlat "$TOP/scripts/build-guest.sh" \
	> "$out/guest.log" 2>&1 ||
	die "could not build the guest (see $out/guest.log)"

failed=0
for i in $(seq "$runs"); do
	for k in ours stock; do
		flavour=matrix-$name
		[ "$k" = stock ] && flavour=stock-matrix-$name
		note "run $i of $runs: $k"
		GUEST=$guest LOGS=$out/$k-$i "$TOP/scripts/run-tests.sh" \
			"$flavour" > "$out/$k-$i.report" 2>&1 || failed=1
		tail -n 1 "$out/$k-$i.report"
	done
done

# One line "KERNEL PHASE WORST P999" a phase a run, from the guests' diag.
for k in ours stock; do
	for i in $(seq "$runs"); do
		sed -n 's/.*# rtlat \([a-z]*\): worst \([0-9]*\) us, p99.9 \([0-9]*\) us.*/\1 \2 \3/p' \
			"$out/$k-$i/ktap.log" | sed "s/^/$k /"
	done
done > "$out/samples.txt"

awk -v runs="$runs" -v mode="$mode" -v params="${APPEND:+ $APPEND}" '
	{ k = $1; p = $2; n[k, p]++; v[k, p, n[k, p]] = $4
	  if ($3 > w[k, p]) w[k, p] = $3
	  if (!(p in seen)) { seen[p] = 1; order[++np] = p } }
	function median(k, p,   a, i, j, m, t) {
		m = n[k, p]
		for (i = 1; i <= m; i++) a[i] = v[k, p, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
			if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return m ? a[int((m + 1) / 2)] : "-"
	}
	END {
		printf "%-8s %12s %12s %12s %12s  (us; %s%s, %d run(s) each)\n", \
			"phase", "ours worst", "stock worst", "ours p99.9", \
			"stock p99.9", mode, params, runs
		floor = w["ours", "idle"] > w["stock", "idle"] ? \
			w["ours", "idle"] : w["stock", "idle"]
		bad = 0
		for (i = 1; i <= np; i++) {
			p = order[i]
			printf "%-8s %12s %12s %12s %12s\n", p, w["ours", p], \
				w["stock", p], median("ours", p), median("stock", p)
			if (p != "idle" && w["ours", p] > w["stock", p] &&
			    w["ours", p] > floor)
				bad = 1
		}
		exit bad
	}' "$out/samples.txt" | tee "$out/table.txt" || failed=1
[ "$failed" = 0 ] || die "a test failed, or ours was later than stock (see $out)"
