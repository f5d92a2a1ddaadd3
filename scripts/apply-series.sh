#!/bin/bash
# Rebuild branch "samepage" in build/src-ksm: pristine plus every patch of
# kernel/series, each a commit of its own. Skipped when nothing changed.
set -euo pipefail
. "$(dirname "$0")/common.sh"

[ -d "$SRC_STOCK/.git" ] || die "no pristine tree: run scripts/prepare-tree.sh"

series=$TOP/kernel/series
mapfile -t patches < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$series")

# Every input of the series, so that an unchanged series is not re-applied.
sum=$( { cat "$series" "$SRC_STOCK/.samepage-stamp"
	 for p in "${patches[@]}"; do cat "$TOP/kernel/$p"; done
	 find "$TOP/kernel/src" -type f -print0 | sort -z |
		xargs -0r sha1sum; } | sha1sum | cut -d' ' -f1)
if [ -f "$SRC_KSM/.samepage-series" ] &&
   [ "$(cat "$SRC_KSM/.samepage-series")" = "$sum" ]; then
	exit 0
fi

if [ ! -e "$SRC_KSM/.git" ]; then
	git -C "$SRC_STOCK" worktree prune
	git -C "$SRC_STOCK" worktree add -q -f --detach "$SRC_KSM" pristine
fi
cd "$SRC_KSM"
git am --abort >/dev/null 2>&1 || true
git checkout -q -f -B samepage pristine

# adds_of PATCH: the new files a patch's notes name on "Adds:" lines.
adds_of() {
	awk '/^---$/ { notes = 1; next } /^diff --git/ { exit }
	     notes && /^Adds: / { print $2 }' "$1"
}

n=0
for p in "${patches[@]}"; do
	file=$TOP/kernel/$p
	[ -f "$file" ] || die "series names $p, which does not exist"
	if grep -q '^diff --git ' "$file"; then
		if ! git am -q --whitespace=nowarn "$file"; then
			git am --abort >/dev/null 2>&1 || true
			die "series does not apply to $PKG: $p failed"
		fi
	else
		# Only new files: git am refuses an empty patch, so commit
		# its message and author by hand.
		info=$(git mailinfo "$BUILD/.msg" /dev/null < "$file")
		GIT_AUTHOR_NAME=$(sed -n 's/^Author: //p' <<<"$info") \
		GIT_AUTHOR_EMAIL=$(sed -n 's/^Email: //p' <<<"$info") \
		git commit -q --allow-empty -F <(sed -n 's/^Subject: //p' <<<"$info"
			echo; cat "$BUILD/.msg")
	fi
	mapfile -t adds < <(adds_of "$file")
	if [ "${#adds[@]}" -gt 0 ]; then
		for f in "${adds[@]}"; do
			[ -f "$TOP/kernel/src/$f" ] ||
				die "$p adds $f, missing from kernel/src"
			mkdir -p "$(dirname "$f")"
			cp "$TOP/kernel/src/$f" "$f"
			git add -f "$f"
		done
		git commit -q --amend --no-edit --allow-empty
	fi
	n=$((n + 1))
done
echo "$sum" > .samepage-series
note "series applied: $n patch(es) on pristine"
