#!/bin/bash
# Unpack Debian's linux-source-6.12 into build/src as a git repository whose
# first commit (tag "pristine") is the untouched tree, then lay the worktree
# build/src-ksm from kernel/ (scripts/lay-tree.sh).
set -euo pipefail
. "$(dirname "$0")/common.sh"

[ -f "$TARBALL" ] || die "$TARBALL missing: apt-get install $PKG"

tested=$(cat "$TOP/kernel/DEBIAN_VERSION")
installed=$(dpkg-query -W -f='${Version}' "$PKG" 2>/dev/null || echo unknown)
if [ "$installed" != "$tested" ]; then
	echo "note: $PKG $installed installed; the series was last tested on $tested" >&2
fi

stamp_want="$installed $(stat -c %s-%Y "$TARBALL")"
if [ ! -f "$SRC_STOCK/.samepage-stamp" ] ||
   [ "$(cat "$SRC_STOCK/.samepage-stamp")" != "$stamp_want" ]; then
	note "unpacking $TARBALL into $SRC_STOCK"
	rm -rf "$SRC_STOCK" "$SRC_KSM"
	mkdir -p "$SRC_STOCK"
	tar -xJf "$TARBALL" -C "$SRC_STOCK" --strip-components=1
	cd "$SRC_STOCK"
	git init -q
	git config user.name "samepage build"
	git config user.email "build@samepage.invalid"
	git config core.autocrlf false
	git config gc.auto 0
	printf '%s\n' '/obj*/' '/.samepage-stamp' >> .git/info/exclude
	git add -A -f .
	git commit -q -m "linux-source-6.12 $installed (pristine)"
	git tag pristine
	echo "$stamp_want" > .samepage-stamp
fi

"$TOP/scripts/lay-tree.sh"
