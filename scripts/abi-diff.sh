#!/bin/bash
# abi-diff.sh: boot the stock kernel (build/stock) and ours (build/ksm) in
# abi mode: each guest runs tests/abi_diff.c, one scripted deterministic
# KSM workload printing what a user can observe as "key value" lines. Then
# compare the two key by key under the rules of tests/abi-diff.rules:
#
#   DIFF KEY stock=V ours=V [(+N more in GROUP)]   an undocumented difference
#   DOCUMENTED NAME: REASON (N keys)                a deliberate one
#   N matched, N differ, N documented               counted in keys
#
# A group is a key with its step number made a wildcard (smart1.step*.ksm.
# pages_skipped); a missing key shows as (none). Exits 1 on any undocumented
# difference. Logs: build/logs/{stock,ksm}-abi/ (console.log, ktap.log) and
# build/logs/abi-diff/{stock,ours}.txt (the snapshots).
#
#   COMPARE_ONLY=1	compare the logs of the last boots, boot nothing
#   VERBOSE=1		a DIFF line for every differing key, not per group
#   RULES=file		another rules file
set -euo pipefail
. "$(dirname "$0")/common.sh"

rules=${RULES:-$TOP/tests/abi-diff.rules}
cmp_dir=$BUILD/logs/abi-diff
[ -f "$rules" ] || die "no rules file $rules"

boot_all() {
	local f start
	for f in stock ksm; do
		[ -f "$BUILD/$f/bzImage" ] || "$TOP/scripts/build-kernel.sh" "$f"
	done
	local initrd=$GUEST/initramfs.cpio.gz
	if [ ! -f "$initrd" ] || [ -n "$(find "$TOP/tests/abi_diff.c" \
	    "$TOP/tests/init" "$TOP/tests/lib" -newer "$initrd" 2>/dev/null)" ]; then
		"$TOP/scripts/build-guest.sh"
	fi
	for f in stock ksm; do
		start=$(date +%s)
		LOGS=$BUILD/logs/$f-abi "$TOP/scripts/boot.sh" "$f" abi
		note "$f: $(($(date +%s) - start)) s wall"
	done
}

# snapshot FLAVOUR OUT: the guest's key-value lines, in its order.
snapshot() {
	local log=$BUILD/logs/$1-abi/ktap.log
	[ -f "$log" ] || die "$log missing: boot first (without COMPARE_ONLY)"
	if ! tr -d '\r' < "$log" | grep -q '^# abi_diff done'; then
		tail -n 20 "$BUILD/logs/$1-abi/console.log" >&2 || true
		die "$1: the guest did not finish abi_diff (see $BUILD/logs/$1-abi)"
	fi
	tr -d '\r' < "$log" | grep -E '^[a-z][a-z0-9_]*\.[^ ]+ ' > "$2"
}

[ "${COMPARE_ONLY:-0}" = 1 ] || boot_all
mkdir -p "$cmp_dir"
snapshot stock "$cmp_dir/stock.txt"
snapshot ksm "$cmp_dir/ours.txt"

exec awk -v verbose="${VERBOSE:-0}" '
function glob_re(g,	r, i, c) {
	r = ""
	for (i = 1; i <= length(g); i++) {
		c = substr(g, i, 1)
		if (c == "*") r = r ".*"
		else if (c == "?") r = r "."
		else if (index("\\^$.|+(){}", c)) r = r "\\" c
		else r = r c
	}
	return "^" r "$"
}
function num(v) { return v ~ /^-?[0-9]+(\.[0-9]+)?$/ }
function abs(v) { return v < 0 ? -v : v }
# The first rule whose glob matches key k (0: none, i.e. exact).
function rule_of(k,	i) {
	for (i = 1; i <= nr; i++)
		if (k ~ re[i]) return i
	return 0
}
function within(a, b, t,	lim) {
	if (!num(a) || !num(b)) return 0
	lim = t ~ /%$/ ? (t + 0) / 100 * (abs(a) > abs(b) ? abs(a) : abs(b)) : t + 0
	return abs(a - b) <= lim
}
function show(v) { return v == "\001" ? "(none)" : v }
FILENAME == ARGV[1] {
	sub(/^[ \t]+/, "")
	if ($0 == "" || $0 ~ /^#/) next
	nr++; re[nr] = glob_re($1); act[nr] = $2; arg[nr] = $3
	if ($2 == "documented") {
		why[nr] = $0; sub(/^[^"]*"/, "", why[nr]); sub(/"[^"]*$/, "", why[nr])
	} else if ($2 != "exact" && $2 != "ignore" && $2 != "tolerance") {
		print "abi-diff: bad rule: " $0 > "/dev/stderr"; bad = 1; exit 2
	}
	next
}
# Keys in snapshot order (a snapshot: the first two parts of a key).
FNR == 1 { delete snap; ns = 0 }
{
	k = $1; v = $0; sub(/^[^ ]+ /, "", v)
	split(k, part, "."); s = part[1] "." part[2]
	if (!(s in snap)) snap[s] = ++ns
	if (!(k in seen)) { seen[k] = 1; bucket[snap[s], ++blen[snap[s]]] = k }
	if (snap[s] > nb) nb = snap[s]
	if (FILENAME == ARGV[2]) stock[k] = v; else ours[k] = v
}
END {
	if (bad) exit 2
	for (i = 1; i <= nb; i++)
		for (j = 1; j <= blen[i]; j++) order[++nk] = bucket[i, j]
	for (i = 1; i <= nk; i++) {
		k = order[i]
		a = (k in stock) ? stock[k] : "\001"
		b = (k in ours) ? ours[k] : "\001"
		r = rule_of(k)
		if (a == b || (r && a != "\001" && b != "\001" &&
		    (act[r] == "ignore" ||
		     (act[r] == "tolerance" && within(a, b, arg[r]))))) {
			matched++; continue
		}
		if (r && act[r] == "documented") {
			documented++
			if (!(arg[r] in dcount)) dorder[++nd] = arg[r]
			dcount[arg[r]]++; dwhy[arg[r]] = why[r]
			continue
		}
		differ++
		g = k; gsub(/\.step[0-9]+\./, ".step*.", g)
		if (verbose) { print "DIFF " k " stock=" show(a) " ours=" show(b); continue }
		if (!(g in gcount)) {
			gorder[++ng] = g
			gfirst[g] = k " stock=" show(a) " ours=" show(b)
		}
		gcount[g]++
	}
	for (i = 1; i <= ng; i++) {
		g = gorder[i]
		extra = gcount[g] > 1 ? " (+" gcount[g] - 1 " more in " g ")" : ""
		print "DIFF " gfirst[g] extra
	}
	for (i = 1; i <= nd; i++)
		print "DOCUMENTED " dorder[i] ": " dwhy[dorder[i]] " (" dcount[dorder[i]] " keys)"
	printf "%d matched, %d differ, %d documented\n", matched, differ, documented
	exit (differ > 0)
}' "$rules" "$cmp_dir/stock.txt" "$cmp_dir/ours.txt"
