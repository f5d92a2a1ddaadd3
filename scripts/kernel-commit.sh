#!/bin/bash
# kernel-commit.sh [KDIR]: write the tree that KDIR (default kernel/)
# describes - pristine, plus its new files, its diffs applied and its
# removals - into build/src's object store, touching no worktree, and print
# a commit of it on pristine. Author, date and message are fixed, so the
# same sources always give the same commit.
set -euo pipefail
. "$(dirname "$0")/common.sh"

kdir=${1:-$KERNEL}
[ -d "$SRC_STOCK/.git" ] || die "no pristine tree: run scripts/prepare-tree.sh"
export GIT_INDEX_FILE
GIT_INDEX_FILE=$(mktemp "$BUILD/.index.XXXXXX")
trap 'rm -f "$GIT_INDEX_FILE"' EXIT
cd "$SRC_STOCK"
git read-tree pristine
mapfile -t inputs < <(kernel_files "$kdir")
for line in "${inputs[@]}"; do
	index_add "$kdir" ${line}
done
tree=$(git write-tree)
fixed_date git commit-tree "$tree" -p pristine -m "samepage: pristine and kernel/"
