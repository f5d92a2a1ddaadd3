# shellcheck shell=bash
# Shared settings of the host-side scripts; sourced, never run.

shopt -s inherit_errexit
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
TARBALL=${TARBALL:-/usr/src/linux-source-6.12.tar.xz}
PKG=linux-source-6.12
SRC_STOCK=$BUILD/src          # pristine tree, git repo, tag "pristine"
SRC_KSM=$BUILD/src-ksm        # worktree: pristine + kernel/, branch samepage
KERNEL=${KERNEL:-$TOP/kernel} # our sources: tree/, diffs/, removed, series/
GUEST=${GUEST:-$BUILD/guest}  # guest binaries and initramfs
JOBS=${JOBS:-$(nproc)}
# Debian's kernel configurations (package linux-config-6.12)
DEBIAN_CONFIGS=${DEBIAN_CONFIGS:-/usr/src/linux-config-6.12}

die() { echo "error: $*" >&2; exit 1; }
note() { echo ">> $*" >&2; }

# apt_update: apt-get update, tried three times. A mirror mid-sync fails
# one index (exit 100) while the others update; after the last try go on
# with the lists there are: a package truly missing fails the install.
apt_update() {
	local try
	for try in 1 2 3; do
		apt-get update -qq && return 0
		[ "$try" = 3 ] || { note "apt-get update failed; trying again in $((try * 20)) s"; sleep $((try * 20)); }
	done
	note "apt-get update failed three times; going on with the package lists there are"
}

# src_of FLAVOR: source tree a kernel flavour builds from.
src_of() {
	case $1 in
	stock|stock-bench|stock-matrix-*) echo "$SRC_STOCK" ;;
	ksm|noksm|ksm-bench|ksm-kasan|matrix-*) echo "$SRC_KSM" ;;
	series) echo "${SERIES_SRC:-$BUILD/series-am}" ;;
	*) die "unknown kernel flavour '$1' (ksm, stock, noksm, ksm-bench, stock-bench, ksm-kasan, matrix-NAME, stock-matrix-NAME, series)" ;;
	esac
}

# gnuplot_term: pngcairo where gnuplot has it, else png.
gnuplot_term() {
	if gnuplot -e 'set terminal pngcairo' 2>/dev/null; then
		echo pngcairo
	else
		echo png
	fi
}

# kernel_files KDIR: the inputs of the tree, one a line: "tree PATH" for
# each new file (KDIR/tree/PATH), "diff NAME" for each diff of pristine
# files (KDIR/diffs/NAME), "remove PATH" for each pristine file deleted.
kernel_files() {
	(cd "$1/tree" && find . -type f | sed 's|^\./||' | LC_ALL=C sort |
		sed 's/^/tree /')
	(cd "$1/diffs" && ls | LC_ALL=C sort | sed 's/^/diff /')
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' -e 's/^/remove /' "$1/removed"
}

# fixed_date CMD...: run a git command that makes commits with one fixed
# author, committer and date, so that its commits depend on content alone.
fixed_date() {
	GIT_AUTHOR_NAME=samepage GIT_AUTHOR_EMAIL=samepage@users.noreply.example \
	GIT_COMMITTER_NAME=samepage GIT_COMMITTER_EMAIL=samepage@users.noreply.example \
	GIT_AUTHOR_DATE='2024-11-17 00:00:00 +0000' \
	GIT_COMMITTER_DATE='2024-11-17 00:00:00 +0000' "$@"
}

# worktree_new DIR: the files of the git worktree DIR that git does not
# track, whatever the tree's .gitignore says (Debian's ignores everything
# at the top level), but for the object trees (obj-*) and our stamps.
worktree_new() {
	git -C "$1" ls-files --others --exclude='/obj*/' --exclude='/.samepage-*'
}

# worktree_dirty DIR: list what the git worktree DIR holds beyond its HEAD:
# edits, and new files.
worktree_dirty() {
	git -C "$1" status --porcelain --untracked-files=no
	worktree_new "$1" | sed 's/^/?? /'
}

# index_add KDIR KIND PATH: take one input of the tree (see kernel_files)
# into the index GIT_INDEX_FILE of the git repository in the current
# directory, which must hold pristine's objects.
index_add() {
	local kdir=$1 kind=$2 path=$3 mode=100644 blob
	case $kind in
	tree)
		[ -f "$kdir/tree/$path" ] || die "no file tree/$path"
		[ -x "$kdir/tree/$path" ] && mode=100755
		blob=$(git hash-object -w -- "$kdir/tree/$path")
		git update-index --add --cacheinfo "$mode,$blob,$path" ;;
	diff)
		[ -f "$kdir/diffs/$path" ] || die "no diff diffs/$path"
		git apply --cached --whitespace=nowarn "$kdir/diffs/$path" ||
			die "diffs/$path does not apply to $PKG" ;;
	remove)
		git ls-files --error-unmatch -- "$path" >/dev/null 2>&1 ||
			die "removed names $path, which the tree does not have"
		git update-index --force-remove -- "$path" ;;
	*)
		die "unknown input kind '$kind'" ;;
	esac
}
