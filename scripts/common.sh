# shellcheck shell=bash
# Shared settings of the host-side scripts; sourced, never run.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
TARBALL=${TARBALL:-/usr/src/linux-source-6.12.tar.xz}
PKG=linux-source-6.12
SRC_STOCK=$BUILD/src          # pristine tree, git repo, tag "pristine"
SRC_KSM=$BUILD/src-ksm        # worktree: pristine + our series
GUEST=${GUEST:-$BUILD/guest}  # guest binaries and initramfs
JOBS=${JOBS:-$(nproc)}

die() { echo "error: $*" >&2; exit 1; }
note() { echo ">> $*" >&2; }

# src_of FLAVOR: source tree a kernel flavour builds from.
src_of() {
	case $1 in
	stock|stock-bench) echo "$SRC_STOCK" ;;
	ksm|noksm|ksm-bench|ksm-kasan|matrix-*) echo "$SRC_KSM" ;;
	*) die "unknown kernel flavour '$1' (ksm, stock, noksm, ksm-bench, stock-bench, ksm-kasan, matrix-NAME)" ;;
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
