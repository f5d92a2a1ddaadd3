#!/bin/bash
# lay-tree.sh: make the worktree build/src-ksm (branch samepage) hold
# exactly what kernel/ describes: one commit on pristine, made by
# kernel-commit.sh. Only the files that differ from the worktree's last
# state are written, so kbuild rebuilds only what they reach.
#
# The worktree is an output: an edit made there and not taken into
# kernel/ with "make refresh" would be lost, so a worktree with such
# edits is refused, never overwritten.
set -euo pipefail
. "$(dirname "$0")/common.sh"

if [ ! -e "$SRC_KSM/.git" ]; then
	git -C "$SRC_STOCK" worktree prune
	git -C "$SRC_STOCK" worktree add -q -f --detach "$SRC_KSM" pristine
fi
dirty=$(worktree_dirty "$SRC_KSM")
if [ -n "$dirty" ]; then
	printf '%s\n' "$dirty" | head -n 20 >&2
	die "build/src-ksm has edits that kernel/ does not: 'make refresh' takes them into kernel/, 'git -C build/src-ksm reset -q --hard' and deleting the new files (??) drop them"
fi
commit=$("$TOP/scripts/kernel-commit.sh")
cd "$SRC_KSM"
if [ "$(git rev-parse HEAD)" != "$commit" ]; then
	git checkout -q -B samepage "$commit"
	note "build/src-ksm laid from kernel/ ($(git rev-parse --short HEAD^{tree}))"
fi
