#!/bin/bash
# Export the applied series (build/src-ksm, pristine..samepage) as a
# git format-patch series with a cover letter into build/series, check it
# with checkpatch --strict, and prove that it applies with git am to the
# pristine tree.
set -euo pipefail
. "$(dirname "$0")/common.sh"

out=${1:-$BUILD/series}
"$TOP/scripts/apply-series.sh"
cd "$SRC_KSM"
n=$(git rev-list --count pristine..samepage)
rm -rf "$out"
mkdir -p "$out"
if [ "$n" = 0 ]; then
	echo "series is empty: nothing to export"
	exit 0
fi

subject=$(head -1 "$TOP/kernel/cover-letter")
git format-patch -q --cover-letter --base=pristine -o "$out" pristine..samepage
cover=$(ls "$out"/0000-*.patch)
awk -v subj="$subject" -v body="$TOP/kernel/cover-letter" '
	/\*\*\* SUBJECT HERE \*\*\*/ { sub(/\*\*\* SUBJECT HERE \*\*\*/, subj) }
	/\*\*\* BLURB HERE \*\*\*/ {
		getline l < body	# the subject line
		getline l < body	# the blank line after it
		while ((getline l < body) > 0) print l
		next
	}
	{ print }' "$cover" > "$cover.new" && mv "$cover.new" "$cover"

# FILE_PATH_CHANGES only asks whether MAINTAINERS needs a new entry for new
# files; mm/ has a single MAINTAINERS section that already covers mm/ksm/.
cp_opts=(--strict -q --no-signoff --ignore FILE_PATH_CHANGES)
# checkpatch's SPDX check needs python3-ply, which Debian's python3 has.
export PATH=/usr/bin:$PATH
bad=0
for p in "$out"/0*.patch; do
	[ "$p" = "$cover" ] && continue
	if ! ./scripts/checkpatch.pl "${cp_opts[@]}" "$p" >/dev/null 2>&1; then
		./scripts/checkpatch.pl "${cp_opts[@]}" --terse "$p" || true
		bad=1
	fi
	grep -q '^Signed-off-by: ' "$p" || { echo "$(basename "$p"): no Signed-off-by"; bad=1; }
done

# The export must apply to a pristine tree on its own.
check=$BUILD/series-check
git worktree remove -f "$check" >/dev/null 2>&1 || rm -rf "$check"
git worktree add -q -f --detach "$check" pristine
mapfile -t patches < <(ls "$out"/0*.patch | grep -v '/0000-')
git -C "$check" am -q "${patches[@]}" ||
	die "exported series does not apply to pristine"
git worktree remove -f "$check"

echo "exported $n patch(es) and a cover letter to $out"
[ "$bad" = 0 ] || die "checkpatch --strict or Signed-off-by problems above"
