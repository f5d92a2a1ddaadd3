#!/bin/bash
# ktap.sh LOGDIR: read a test boot's results and print one line per test and
# a last line "N passed, N failed". The leaves are the subtests of each plan
# entry (ktap.log) and of KUnit (console.log). Exit non-zero on any failure,
# on a skip, on a kernel splat in console.log, or when the guest did not
# finish. EXPECTED_SKIPS names a file of test-name prefixes whose skips are
# expected on this kernel (tests/skips-stock: our extensions, on stock).
set -euo pipefail
. "$(dirname "$0")/common.sh"

logs=${1:?usage: ktap.sh LOGDIR}
# XFAIL names the expected-failure list (tests/xfail; make matrix's i386
# run uses tests/xfail-i386).
xfail=${XFAIL:-$TOP/tests/xfail}
ktap=$logs/ktap.log
console=$logs/console.log
touch "$ktap" "$console"

# KUnit prints its KTAP in the kernel log, a suite's header and cases one
# level in and its result at the top: drop the printk timestamps and keep
# those two levels, so that each suite reads like a plan entry.
kunit() {
	sed -n 's/\r$//; s/^\[ *[0-9.]*\] //p' "$console" |
		grep -E '^( {4})?(ok |not ok |# Subtest: )' |
		sed 's/^    \(# Subtest: \)/\1/'
}

{ tr -d '\r' < "$ktap"; kunit; } |
awk -v xfile="$xfail" -v xname="${xfail#"$TOP"/}" -v sfile="${EXPECTED_SKIPS:-/dev/null}" '
BEGIN {
	while ((getline l < xfile) > 0)
		if (l !~ /^#/ && l != "") xf[l] = 1
	while ((getline l < sfile) > 0)
		if (l !~ /^#/ && l != "") sk[++nsk] = l
}
# A skip this kernel is expected to have: its name starts with a line of
# the EXPECTED_SKIPS file.
function expected_skip(name,    j) {
	for (j = 1; j <= nsk; j++)
		if (substr(name, 1, length(sk[j])) == sk[j]) return 1
	return 0
}
function leaf(name, ok, skip,    x) {
	x = (name in xf)
	if (skip && expected_skip(name)) {
		print "SKIP  " name " (expected here)"; nskipok++; return
	}
	if (skip) { print "SKIP  " name; nskip++; return }
	if (ok && x) { print "XPASS " name " (listed in " xfile ")"; nfail++ }
	else if (ok) { print "PASS  " name; npass++ }
	else if (x) { print "XFAIL " name; nxfail++ }
	else { print "FAIL  " name; nfail++ }
}
function result(line, re,    m, name, ok, skip) {
	ok = (line ~ "^" re "ok ")
	name = line
	sub("^" re "(not )?ok [0-9]+ (- )?", "", name)
	skip = (name ~ /# *[Ss][Kk][Ii][Pp]/)
	sub(/ *#.*$/, "", name)
	return (ok ? 1 : 0) + (skip ? 2 : 0) "\t" name
}
# A forked child can repeat the buffered lines of its parent: in a suite, the
# last result under a number is the one that counts.
function flush_suite(    j) {
	for (j = 1; j <= nnum; j++)
		leaf(suite ": " lname[num[j]], lres[num[j]] % 2, lres[num[j]] >= 2)
	nnum = 0; delete lname; delete lres; delete num
}
/^# Subtest: / { suite = substr($0, 12); nleaf = 0; leaves_ok = 1; next }
/^    (not )?ok [0-9]+/ {
	r = result($0, "    "); split(r, f, "\t")
	n = $0; sub(/^    (not )?ok /, "", n); sub(/ .*/, "", n)
	if (!(n in lres)) num[++nnum] = n
	lname[n] = f[2]; lres[n] = f[1]
	nleaf++
	next
}
/^(not )?ok [0-9]+/ {
	r = result($0, ""); split(r, f, "\t")
	for (j = 1; j <= nnum; j++)
		if (lres[num[j]] == 0) leaves_ok = 0
	if (nleaf == 0)
		leaf(f[2], f[1] % 2, f[1] >= 2)
	else
		flush_suite()
	if (nleaf && f[1] % 2 == 0 && leaves_ok)
		leaf(f[2] " (exit status)", 0, 0)
	suite = ""; nleaf = 0
	next
}
/^# samepage: done/ { done = 1 }
END {
	if (!done) { print "FAIL  guest finished its run"; nfail++ }
	printf "%d passed, %d failed", npass, nfail
	if (nskip) printf ", %d skipped", nskip
	if (nskipok) printf ", %d skipped as expected", nskipok
	if (nxfail) printf ", %d expected to fail (%s)", nxfail, xname
	printf "\n"
	exit (nfail || nskip) ? 1 : 0
}' > "$logs/results.txt" || true

# Kernel splats fail the run whatever the tests said. The OOM killer's
# reports carry stack dumps but are no splats (tests/ksm_oom.c provokes
# them on purpose, as mainline behaves): from "invoked oom-killer" to
# "Killed process", and the OOM reaper's "unable to reap" with the stack
# of the task it could not reap.
splat='(BUG:|WARNING:|INFO: possible|suspicious RCU usage|Oops|Kernel panic|general protection fault|Call Trace:|KASAN|UBSAN|soft lockup|hard LOCKUP|self-detected stall|blocked for more than)'
splats=$(awk -v re="$splat" '
	/invoked oom-killer/ { oom = "Killed process" }
	/oom_reaper: unable to reap/ { oom = "</TASK>" }
	!oom && $0 ~ re { print }
	oom && index($0, oom) { oom = "" }' "$console" | head -5 || true)

res=$(cat "$logs/results.txt")
body=$(printf '%s\n' "$res" | sed '$d')
last=$(printf '%s\n' "$res" | tail -1)
[ -z "$body" ] || printf '%s\n' "$body"
status=0
awk '/^(FAIL|XPASS|SKIP)/ && !/ \(expected here\)$/ { bad = 1 }
     END { exit !bad }' "$logs/results.txt" && status=1
if [ -n "$splats" ]; then
	echo "FAIL  kernel log free of splats (first: $(printf '%s' "$splats" | head -1))"
	p=${last%% passed*}; f=${last#*passed, }; f=${f%% failed*}
	last="$p passed, $((f + 1)) failed${last#*failed}"
	status=1
fi
echo "$last"
exit $status
