#!/bin/bash
# demo-plot.sh [DIR]: draw the run that make demo just showed. DIR (default
# build/logs/ksm-demo) holds demo.jsonl, the ksmtop --json snapshots the
# guest wrote to its second serial port; this writes DIR/demo.dat (seconds,
# memory saved in MiB, ksmd CPU in % of one CPU, pages_sharing) and
# DIR/demo.png: memory saved and ksmd's CPU over time.
set -euo pipefail
. "$(dirname "$0")/common.sh"

dir=${1:-${LOGS:-$BUILD/logs/ksm-demo}}
in=$dir/demo.jsonl
[ -s "$in" ] || die "no snapshots in $in (did the demo run?)"
command -v gnuplot >/dev/null || die "no gnuplot: apt-get install gnuplot-nox"

# The values of a few flat keys of each snapshot; null becomes "?", which
# gnuplot skips. The serial port may add carriage returns.
awk '
function val(key,   m) {
	if (!match($0, "\"" key "\":[^,}]*"))
		return "?"
	m = substr($0, RSTART + length(key) + 3, RLENGTH - length(key) - 3)
	return m == "null" ? "?" : m
}
{ sub(/\r$/, "") }
/^\{/ {
	t = val("uptime")
	if (t == "?")
		next
	if (t0 == "")
		t0 = t
	saved = val("saved_bytes")
	printf "%.2f %s %s %s\n", t - t0,
		saved == "?" ? "?" : sprintf("%.3f", saved / 1048576),
		val("ksmd_cpu_pct"), val("pages_sharing")
}' "$in" > "$dir/demo.dat"
[ -s "$dir/demo.dat" ] || die "no snapshots in $in"

gnuplot <<-EOF
set terminal $(gnuplot_term) size 900,540
set output '$dir/demo.png'
set title 'make demo: KSM merging six clones of one memory image (ksmtop --json)'
set xlabel 'guest seconds'
set ylabel 'memory saved (MiB)'
set y2label 'ksmd CPU (% of one CPU)'
set yrange [0:*]
set y2range [0:*]
set ytics nomirror
set y2tics
set key below
set grid
set datafile missing '?'
plot '$dir/demo.dat' using 1:2 axes x1y1 with lines lw 2 title 'memory saved', \
     '$dir/demo.dat' using 1:3 axes x1y2 with fsteps lw 1 title 'ksmd CPU (over the interval before)'
EOF
note "$(wc -l < "$dir/demo.dat") snapshots: plot in $dir/demo.png"
