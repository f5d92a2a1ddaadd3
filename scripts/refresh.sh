#!/bin/bash
# refresh.sh [DIFF]: take what was edited in the worktree build/src-ksm
# into kernel/, so that the repository holds it: a new file into
# kernel/tree/, an edited pristine file into the diff of kernel/diffs/ that
# owns it (one no diff owns yet into DIFF, which must then be named), a
# deleted pristine file into kernel/removed. A new file, diff or removal
# must also be named by a patch of kernel/series/ (export-series.sh says
# which is missing). Then the worktree's branch moves to the commit that
# kernel/ now describes, so it is clean again.
set -euo pipefail
. "$(dirname "$0")/common.sh"

newdiff=${1:-}
[ -e "$SRC_KSM/.git" ] || die "no worktree build/src-ksm: nothing to refresh"
# kernel/ and the worktree must not both have moved since the last lay.
[ "$(git -C "$SRC_KSM" rev-parse HEAD)" = "$("$TOP/scripts/kernel-commit.sh")" ] ||
	die "kernel/ changed since build/src-ksm was laid: refresh would overwrite it (lay the tree first, or copy the edits by hand)"
[ -n "$(worktree_dirty "$SRC_KSM")" ] || { note "build/src-ksm has no edits"; exit 0; }

cd "$SRC_KSM"
idx=$(mktemp "$BUILD/.index.XXXXXX")
trap 'rm -f "$idx"' EXIT
export GIT_INDEX_FILE=$idx
git read-tree HEAD
git add -A .
worktree_new . | tr '\n' '\0' | xargs -0r git add -f --
want=$(git write-tree)

# owner PATH: the diff of kernel/diffs/ that edits PATH, if any.
owner() {
	grep -lxF "diff --git a/$1 b/$1" "$KERNEL"/diffs/*.diff 2>/dev/null | head -n 1 || true
}

# First gather, into a new tree/ and the lists below, and check: nothing
# in kernel/ changes unless all of it can.
newtree=$(mktemp -d "$BUILD/.tree.XXXXXX")
trap 'rm -f "$idx"; rm -rf "$newtree"' EXIT
declare -A paths=()	# diff file -> the pristine paths it owns
removed=()
for d in "$KERNEL"/diffs/*.diff; do
	paths[$d]=$(sed -n 's|^diff --git a/\(.*\) b/.*|\1|p' "$d")
done
while IFS=$'\t' read -r st path; do
	case $st in
	A)
		mkdir -p "$newtree/$(dirname "$path")"
		cp -p "$path" "$newtree/$path" ;;
	M)
		[ -n "$(owner "$path")" ] && continue
		[ -n "$newdiff" ] || die "$path: no diff of kernel/diffs owns it; name one: make refresh DIFF=topic.diff (nothing was changed)"
		paths[$KERNEL/diffs/$newdiff]+=$'\n'"$path"
		note "$path: now in diffs/$newdiff" ;;
	D)
		grep -qxF "$path" "$KERNEL/removed" || removed+=("$path") ;;
	*)
		die "$path: status $st not understood (nothing was changed)" ;;
	esac
done < <(git diff --cached --no-renames --name-status pristine)

rm -rf "$KERNEL/tree"
mv "$newtree" "$KERNEL/tree"
for path in "${removed[@]}"; do
	echo "$path" >> "$KERNEL/removed"
	note "$path: now in kernel/removed"
done
for d in "${!paths[@]}"; do
	mapfile -t own < <(grep -v '^$' <<<"${paths[$d]}")
	git diff --cached pristine -- "${own[@]}" > "$d"
	if [ ! -s "$d" ]; then
		rm -f "$d"
		note "$(basename "$d") is empty now: removed; drop it from kernel/series"
	fi
done

commit=$("$TOP/scripts/kernel-commit.sh")
[ "$(git rev-parse "$commit^{tree}")" = "$want" ] ||
	die "kernel/ does not give the worktree's tree after the refresh (a bug of this script)"
unset GIT_INDEX_FILE
git reset -q "$commit"
[ -z "$(worktree_dirty "$SRC_KSM")" ] || die "build/src-ksm still differs from kernel/ (a bug of this script)"
note "kernel/ refreshed from build/src-ksm: $(git -C "$TOP" status --short -- kernel | wc -l) path(s) changed"
