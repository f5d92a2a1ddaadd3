#!/bin/bash
# export-series.sh [--check FLAVOUR]: generate the patch series from
# kernel/ and check it.
#
# Each file of kernel/series/ is one patch: header lines naming what it
# takes from kernel/ ("Subject:", then "Tree:" new files, "Diff:" diffs
# of pristine files, "Remove:" pristine files deleted), a blank line, and
# the commit message. The commits are made in build/src's object store
# with fixed author and date, so the same sources give the same series.
#
# Checked every time: the files of mm/ksm/ call each other without a
# cycle, as their headers say (ksm-layers.py); every input of kernel/ is
# taken by exactly one patch; the series, exported with git format-patch,
# applies with git am to pristine and gives the tree of kernel/. With
# --check FLAVOUR, which make test runs after building that kernel, it
# stops there, and that tree must also be the one build/FLAVOUR/bzImage
# was built from: a drift fails the run.
#
# Otherwise (make series): the patches and a cover letter in build/series/
# (with a range-diff against PREV=REV, a commit of this repository, or
# the newest tag series-v*), checkpatch --strict on each patch,
# scripts/kernel-doc -Wall on every new source file, and with CHECK=build
# a kernel build of the test configuration after every patch.
set -euo pipefail
. "$(dirname "$0")/common.sh"

mode=${1:-full}
built=
out=$BUILD/series
am=$BUILD/series-am
if [ "$mode" = --check ]; then
	out=$BUILD/series-check	# make test leaves make series' export alone
	built=$BUILD/${2:?usage: export-series.sh [--check FLAVOUR]}/tree
	[ -f "$built" ] || die "no $built: build the kernel first"
fi

# make_series KDIR: commit each patch of KDIR/series/ on pristine; print
# the tip.
make_series() {
	local kdir=$1 spec parent=pristine tree subject kind path
	local -a inputs
	export GIT_INDEX_FILE
	GIT_INDEX_FILE=$(mktemp "$BUILD/.index.XXXXXX")
	git -C "$SRC_STOCK" read-tree pristine
	for spec in "$kdir"/series/*; do
		subject=$(sed -n '1s/^Subject: //p' "$spec")
		[ -n "$subject" ] || die "$(basename "$spec"): no Subject: line first"
		mapfile -t inputs < <(spec_inputs "$spec")
		for line in "${inputs[@]}"; do
			(cd "$SRC_STOCK" && index_add "$kdir" ${line})
		done
		tree=$(git -C "$SRC_STOCK" write-tree)
		parent=$( { echo "$subject"; echo; spec_body "$spec"; } |
			fixed_date git -C "$SRC_STOCK" commit-tree "$tree" -p "$parent")
	done
	rm -f "$GIT_INDEX_FILE"
	unset GIT_INDEX_FILE
	echo "$parent"
}

# spec_inputs SPEC: the inputs a patch takes, as kernel_files names them.
spec_inputs() {
	awk '/^$/ { exit }
	     /^Tree:/ { for (i = 2; i <= NF; i++) print "tree " $i }
	     /^Diff:/ { for (i = 2; i <= NF; i++) print "diff " $i }
	     /^Remove:/ { for (i = 2; i <= NF; i++) print "remove " $i }' "$1"
}

# spec_body SPEC: the commit message after the header.
spec_body() {
	awk 'body { print } /^$/ { body = 1 }' "$1"
}

# check_inputs KDIR: every input taken exactly once, nothing unknown.
check_inputs() {
	local taken
	taken=$(for s in "$1"/series/*; do spec_inputs "$s"; done | LC_ALL=C sort)
	local dup missing extra
	dup=$(uniq -d <<<"$taken")
	missing=$(LC_ALL=C comm -23 <(kernel_files "$1" | LC_ALL=C sort) <(uniq <<<"$taken"))
	extra=$(LC_ALL=C comm -13 <(kernel_files "$1" | LC_ALL=C sort) <(uniq <<<"$taken"))
	[ -z "$dup" ] || die "taken by more than one patch: $dup"
	[ -z "$missing" ] || die "taken by no patch of kernel/series: $missing"
	[ -z "$extra" ] || die "kernel/series names what kernel/ does not have: $extra"
	# Each pristine file is edited by one diff only.
	dup=$(sed -n 's|^diff --git a/\(.*\) b/.*|\1|p' "$1"/diffs/*.diff | LC_ALL=C sort | uniq -d)
	[ -z "$dup" ] || die "edited by more than one diff of kernel/diffs: $dup"
}

python3 "$TOP/scripts/ksm-layers.py" "$KERNEL/tree/mm/ksm" > "$BUILD/ksm-layers.txt" || {
	cat "$BUILD/ksm-layers.txt"
	die "mm/ksm/: a cycle between files, or a header that says otherwise"
}
if [ -n "$built" ]; then
	want=$(git -C "$SRC_STOCK" rev-parse "$("$TOP/scripts/kernel-commit.sh")^{tree}")
	[ "$(cat "$built")" = "$want" ] ||
		die "kernel/ changed since $(dirname "${built#"$BUILD"/}")'s kernel was built: the tests would not test it"
else
	"$TOP/scripts/lay-tree.sh"
	want=$(git -C "$SRC_KSM" rev-parse HEAD^{tree})
fi
check_inputs "$KERNEL"
tip=$(make_series "$KERNEL")
[ "$(git -C "$SRC_STOCK" rev-parse "$tip^{tree}")" = "$want" ] ||
	die "the series' tip differs from the tree of kernel/ (a bug of this script)"
n=$(git -C "$SRC_STOCK" rev-list --count "pristine..$tip")

rm -rf "$out"
mkdir -p "$out"
fixed_date git -C "$SRC_STOCK" format-patch -q --cover-letter --base=pristine \
	-o "$out" "pristine..$tip"
mapfile -t patches < <(ls "$out"/0*.patch | grep -v '/0000-')

# The export must apply to pristine with git am and give the tested tree.
[ -e "$am/.git" ] || git -C "$SRC_STOCK" worktree add -q -f --detach "$am" pristine
git -C "$am" am --abort >/dev/null 2>&1 || true
git -C "$am" checkout -q -f --detach pristine
git -C "$am" clean -q -fd
fixed_date git -C "$am" am -q "${patches[@]}" ||
	die "the exported series does not apply to pristine with git am"
[ "$(git -C "$am" rev-parse HEAD^{tree})" = "$want" ] ||
	die "git am of the export gives another tree than kernel/ describes"
if [ "$mode" = --check ]; then
	echo "series: $n patches from kernel/, each input once; git am on pristine gives the tested tree; mm/ksm/ layered without a cycle"
	exit 0
fi

# The cover letter: kernel/cover-letter, then the range-diff.
prev=${PREV:-$(git -C "$TOP" tag -l 'series-v*' --sort=-v:refname | head -n 1)}
rd=$BUILD/range-diff.txt
if [ -n "$prev" ]; then
	pk=$(mktemp -d)
	git -C "$TOP" archive "$prev" kernel | tar -x -C "$pk"
	ptip=$(KERNEL=$pk/kernel make_series "$pk/kernel")
	rm -rf "$pk"
	{ echo "Changes since the export at $prev:"; echo
	  git -C "$SRC_STOCK" range-diff --no-color "pristine..$ptip" "pristine..$tip"; } > "$rd"
else
	: > "$rd"	# no earlier export in this form: nothing to compare
fi
cover=$(ls "$out"/0000-*.patch)
awk -v subj="$(head -n 1 "$KERNEL/cover-letter")" -v body="$KERNEL/cover-letter" -v rd="$rd" '
	/\*\*\* SUBJECT HERE \*\*\*/ { sub(/\*\*\* SUBJECT HERE \*\*\*/, subj) }
	/\*\*\* BLURB HERE \*\*\*/ {
		getline l < body	# the subject line
		getline l < body	# the blank line after it
		while ((getline l < body) > 0) print l
		if ((getline l < rd) > 0) {
			print ""
			print l
			while ((getline l < rd) > 0) print l
		}
		next
	}
	{ print }' "$cover" > "$cover.new" && mv "$cover.new" "$cover"

bad=0
# FILE_PATH_CHANGES asks whether MAINTAINERS needs a new entry for new
# files; mm/ has one MAINTAINERS section that already covers mm/ksm/.
cp_opts=(--strict -q --ignore FILE_PATH_CHANGES)
export PATH=/usr/bin:$PATH	# checkpatch's SPDX check: python3-ply, python3-git
for p in "${patches[@]}"; do
	if ! (cd "$am" && ./scripts/checkpatch.pl "${cp_opts[@]}" "$p" >/dev/null 2>&1); then
		(cd "$am" && ./scripts/checkpatch.pl "${cp_opts[@]}" --terse "$p") || true
		bad=1
	fi
done
mapfile -t srcs < <(kernel_files "$KERNEL" | sed -n 's/^tree \(.*\.[ch]\)$/\1/p' | grep -v '^tools/')
kd=$( (cd "$am" && ./scripts/kernel-doc -Wall -none "${srcs[@]}") 2>&1 || true)
if [ -n "$kd" ]; then
	echo "$kd"
	bad=1
fi
echo "exported $n patches and a cover letter to $out: git am on pristine gives the tested tree"
[ "$bad" = 0 ] || die "checkpatch --strict or kernel-doc -Wall found problems (above)"
echo "checkpatch --strict: clean; kernel-doc -Wall: clean (${#srcs[@]} files)"

[ "${CHECK:-}" = build ] || exit 0
# Every patch must build, without a warning: the test configuration, in
# build/series-am, patch after patch (kbuild rebuilds what each reaches).
# CHECK_FROM=N starts at patch N.
i=0
from=${CHECK_FROM:-1}
for c in $(git -C "$SRC_STOCK" rev-list --reverse "pristine..$tip"); do
	i=$((i + 1))
	[ "$i" -ge "$from" ] || continue
	git -C "$am" checkout -q -f --detach "$c"
	subj=$(git -C "$am" log -1 --format=%s)
	note "building after patch $i/$n: $subj"
	log=$BUILD/logs/series/build-$i.log
	mkdir -p "$(dirname "$log")"
	SERIES_SRC=$am "$TOP/scripts/build-kernel.sh" series > "$log" 2>&1 ||
		die "the tree does not build after patch $i ($subj): $log"
	if grep -q 'warning:' "$log"; then
		grep 'warning:' "$log" >&2
		die "warnings after patch $i ($subj): $log"
	fi
done
echo "CHECK=build: the tree builds without a warning after each of patches $from to $n"
