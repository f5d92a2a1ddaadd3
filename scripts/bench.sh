#!/bin/bash
# bench.sh: boot the pristine kernel (stock), then ours (ksm), in bench mode
# (the guest runs bench/ksm_bench.c), and compare them metric by metric.
# Results: LOGS/{stock,ksm}/ (boot logs, metrics.txt, clones.dat),
# LOGS/report.txt (the table), LOGS/clones.png (memory saved over time on
# the clones workload) and LOGS/clones-cpu.png (ksmd's CPU time over the
# same run); LOGS defaults to build/bench.
#
#   BENCH_MODE=icount	(default) -icount: guest time counts instructions,
#			so a run repeats almost exactly and host load is no
#			noise; the times are of an emulated 62.5 MIPS CPU.
#   BENCH_MODE=wall	no icount: real time of the emulation, noisy.
#   REPEAT=N		boot each kernel N times (alternately); a metric is
#			the mean, the spread column (max - min) / mean over
#			both kernels' runs.
#   SMP=N		guest CPUs (default 1: QEMU's icount with two CPUs
#			runs them round robin and stalls a sleeping one).
#   PROFILE=1		also boot with profile=4: LOGS/{stock,ksm}/profile.txt
#			gives each measured span's kernel time by function
#			(the bench kernels have CONFIG_PROFILING, inert
#			without the boot option).
#   ROWS=A,B		run only the workloads whose names contain A or B
#			(clones, unique, thp, request, writer, volatile,
#			fork_kill, migrate, exit): a quicker look at a few
#			rows, not a result.
#   MEM, TIMEOUT, GUEST	as for boot.sh (defaults 6G: the unique 1M row
#			needs 4 GiB of pages; 3600 s).
#
# Noise floor under icount, measured with two stock kernels: two boots of
# one kernel agree within 0.3%, two builds of the same source within 1.5%
# (unmerge_madvise, clones_merge_pages_scanned); a ratio closer to 1 than
# that is noise. Wall mode on a loaded host is off by tens of percent.
set -euo pipefail
. "$(dirname "$0")/common.sh"

mode=${BENCH_MODE:-icount}
repeat=${REPEAT:-1}
out=${LOGS:-$BUILD/bench}
export MEM=${MEM:-6G} TIMEOUT=${TIMEOUT:-3600} SMP=${SMP:-1}
# The test config has lockdep; validating every lock would weigh on the
# kernel that takes more locks, so the bench turns validation off.
export APPEND="${APPEND:-} lockdep.prove_locking=0"
# PROFILE=1: the kernels sample where they spend their ticks (16-byte
# buckets), and each flavour's measured spans are named by function in
# profile.txt beside its metrics.
profile=${PROFILE:-0}
[ "$profile" = 1 ] && APPEND="$APPEND profile=4"
[ -n "${ROWS:-}" ] && APPEND="$APPEND samepage.rows=$ROWS"
case $mode in
icount) export ICOUNT=1 ;;
wall) export ICOUNT=0 ;;
*) die "BENCH_MODE is icount or wall, not '$mode'" ;;
esac
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "REPEAT is a positive number"
command -v gnuplot >/dev/null || die "no gnuplot: apt-get install gnuplot-nox"
flavours=(stock ksm)
# The kernels booted: build/stock-bench and build/ksm-bench (no debugging);
# KSUFFIX= boots the test kernels instead.
KSUFFIX=${KSUFFIX--bench}

# run_dir FLAVOUR N: logs of run N (the first directly in LOGS/FLAVOUR).
run_dir() {
	if [ "$2" = 1 ]; then echo "$out/$1"; else echo "$out/$1/run$2"; fi
}

# boot_one FLAVOUR N: one bench boot; fails unless the guest finished.
boot_one() {
	local dir start
	dir=$(run_dir "$1" "$2")
	start=$(date +%s.%N)
	LOGS=$dir "$TOP/scripts/boot.sh" "$1$KSUFFIX" bench
	awk -v s="$start" -v e="$(date +%s.%N)" \
		'BEGIN { printf "%.1f\n", e - s }' > "$dir/wall"
	if ! grep -q '^bench done' "$dir/ktap.log" 2>/dev/null; then
		tail -n 20 "$dir/console.log" >&2 || true
		die "$1 run $2: the guest did not finish the bench (see $dir)"
	fi
	grep '^error' "$dir/ktap.log" >&2 || true
	note "$1 run $2: $(cat "$dir/wall") s wall"
}

# collect FLAVOUR: mean of each metric over the runs into metrics.txt
# ("name mean unit min max"), the first run's series into clones.dat
# ("seconds MiB_saved ksmd_cpu_seconds"; a bench without the CPU column
# leaves the third out).
collect() {
	local i files=()
	for ((i = 1; i <= repeat; i++)); do
		files+=("$(run_dir "$1" "$i")/ktap.log")
	done
	awk '$1 == "metric" {
		n = $2; v = $3 + 0
		if (!(n in sum)) { order[++k] = n; min[n] = v; max[n] = v }
		sum[n] += v; cnt[n]++; unit[n] = $4
		if (v < min[n]) min[n] = v
		if (v > max[n]) max[n] = v
	}
	END {
		for (i = 1; i <= k; i++) {
			n = order[i]
			printf "%s %.6g %s %.6g %.6g\n", n, sum[n] / cnt[n],
				unit[n], min[n], max[n]
		}
	}' "${files[@]}" > "$out/$1/metrics.txt"
	awk '$1 == "series" && $2 == "clones" {
		printf "%s %.3f%s\n", $3, $4 / 1048576, (NF >= 5 ? " " $5 : "") }' \
		"${files[0]}" > "$out/$1/clones.dat"
	if [ "$profile" = 1 ]; then
		"$TOP/scripts/profile-report.py" \
			"$(src_of "$1$KSUFFIX")/obj-$1$KSUFFIX/System.map" \
			"${files[0]}" > "$out/$1/profile.txt"
	fi
}

# table: ours, stock, ours/stock for every metric, and the noise summary.
table() {
	awk -v repeat="$repeat" '
	function abs(x) { return x < 0 ? -x : x }
	FNR == NR { s[$1] = $2; smin[$1] = $4; smax[$1] = $5; next }
	{
		n = $1; o = $2; u = $3
		ratio = "-"
		if (n in s && s[n] != 0) {
			r = o / s[n]; ratio = sprintf("%.3f", r)
			if (abs(r - 1) > worst) {
				worst = abs(r - 1); wname = n
			}
		}
		spread = "-"
		if (repeat > 1 && o != 0) {
			lo = $4 < smin[n] ? $4 : smin[n]
			hi = $5 > smax[n] ? $5 : smax[n]
			spread = sprintf("%.3f", (hi - lo) / ((o + s[n]) / 2))
		}
		printf "%-28s %-8s %12.6g %12.6g %8s", n, u, o, s[n], ratio
		if (repeat > 1) printf " %8s", spread
		printf "\n"
	}
	END {
		printf "\nlargest |ours/stock - 1|: %.3f (%s)\n", worst, wname
	}' "$out/stock/metrics.txt" "$out/ksm/metrics.txt"
}

# plot_clones PNG TITLE YLABEL COLUMN: column COLUMN of both kernels'
# clones.dat over time, into PNG.
plot_clones() {
	gnuplot <<-EOF
	set terminal $(gnuplot_term) size 900,540
	set output '$out/$1'
	set title 'clones: $2'
	set xlabel 'guest seconds since ksmd started ($mode)'
	set ylabel '$3'
	set key bottom right
	set grid
	plot '$out/stock/clones.dat' using 1:$4 with lines lw 2 title 'stock', \
	     '$out/ksm/clones.dat' using 1:$4 with lines lw 2 dt 2 title 'ours'
	EOF
}

# plot TITLE: memory saved over time, both kernels, into clones.png; and
# ksmd's CPU time over the same run into clones-cpu.png, when both
# clones.dat have it (the third column).
plot() {
	local f
	plot_clones clones.png "$1" 'memory saved (MiB)' 2
	for f in stock ksm; do
		awk 'NF < 3 { bad = 1 } END { exit bad || !NR }' \
			"$out/$f/clones.dat" || return 0
	done
	plot_clones clones-cpu.png "$1 (ksmd CPU; the slope is the CPU share)" \
		'ksmd CPU time since ksmd started (s)' 3
}

mkdir -p "$out"
for ((i = 1; i <= repeat; i++)); do
	for f in "${flavours[@]}"; do
		boot_one "$f" "$i"
	done
done
for f in "${flavours[@]}"; do
	collect "$f"
done
logs=()
for f in "${flavours[@]}"; do
	for ((i = 1; i <= repeat; i++)); do
		logs+=("$(run_dir "$f" "$i")/ktap.log")
	done
done
rev=$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)
{
	echo "samepage bench: $mode mode, $repeat run(s) a kernel," \
		"MEM=$MEM SMP=$SMP, $rev"
	printf "%-28s %-8s %12s %12s %8s" metric unit ours stock ratio
	[ "$repeat" -gt 1 ] && printf " %8s" spread
	printf "\n"
	table
	for f in "${flavours[@]}"; do
		for ((i = 1; i <= repeat; i++)); do
			printf "wall time %s run %d: %s s\n" "$f" "$i" \
				"$(cat "$(run_dir "$f" "$i")/wall")"
		done
	done
} | tee "$out/report.txt"
# ROWS= without the clones: no series to plot.
if [ -s "$out/stock/clones.dat" ] && [ -s "$out/ksm/clones.dat" ]; then
	plot "$(sed -n 's/^# clones: //p' "${logs[0]}" | head -n 1)"
	note "report in $out/report.txt, plots in $out/clones.png," \
		"$out/clones-cpu.png"
else
	note "report in $out/report.txt (no clones row: no plots)"
fi
if grep -q '^error' "${logs[@]}"; then
	die "the bench reported errors (lines 'error' in the ktap.log files)"
fi
