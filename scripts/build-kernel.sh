#!/bin/bash
# build-kernel.sh FLAVOUR: configure (tinyconfig + kernel/config/samepage.config)
# and build one kernel. Flavours: ksm (our series), stock (pristine tree, same
# config), noksm (our series with CONFIG_KSM off: the negative check), and
# ksm-bench, stock-bench (both trees with kernel/config/bench.config, which
# turns the debugging off, for make bench), ksm-kasan (our tree with
# kernel/config/kasan.config: make test DEBUG=kasan), and matrix-NAME (our tree with
# the fragment kernel/config/matrix/NAME.config on top, for make matrix; a
# fragment whose first line is "# arch: i386" builds for that ARCH, one
# whose first line is "# base: FILE" starts from Debian's configuration
# /usr/src/linux-config-6.12/FILE.xz instead of tinyconfig),
# stock-matrix-NAME (the pristine tree under such a Debian fragment), and
# series (the tree of build/series-am at one patch of the series, with our
# test config, for make series CHECK=build).
# The image lands in build/FLAVOUR/bzImage.
set -euo pipefail
. "$(dirname "$0")/common.sh"

flavour=${1:?usage: build-kernel.sh ksm|stock|noksm}
src=$(src_of "$flavour")
# The object tree sits directly under the source tree, so kbuild names
# sources relatively ("../mm/ksm.c") and ccache hits across the two trees.
obj=$src/obj-$flavour
out=$BUILD/$flavour
frag=$TOP/kernel/config/samepage.config

# The series' trees are laid by export-series.sh; every other is from here.
[ "$flavour" = series ] || "$TOP/scripts/prepare-tree.sh"

arch=x86_64 base=
case $flavour in
matrix-* | stock-matrix-*)
	mfrag=$TOP/kernel/config/matrix/${flavour#*matrix-}.config
	[ -f "$mfrag" ] || die "no fragment $mfrag"
	arch=$(sed -n '1s/^# arch: *//p' "$mfrag")
	arch=${arch:-x86_64}
	base=$(sed -n '1s/^# base: *//p' "$mfrag")
	# The configurations of one architecture share an object tree:
	# kbuild then rebuilds only what the options that differ reach
	# (fixdep), a few minutes instead of a cold build each.
	obj=$src/obj-matrix-$arch
	# A Debian base shares nothing with tinyconfig: a tree of its own.
	[ -z "$base" ] || obj=$src/obj-$flavour
	# Stock under a Debian configuration (scripts/rt-latency.sh): the
	# fragments on tinyconfig name options only our tree has.
	[ -n "$base" ] || [ "${flavour#stock-}" = "$flavour" ] ||
		die "$flavour: stock builds only a Debian configuration (# base:)" ;;
esac
mk=(make -C "$src" O="$obj" ARCH="$arch" -j"$JOBS" -s)
if command -v ccache >/dev/null; then
	export CCACHE_DIR=${CCACHE_DIR:-$BUILD/ccache}
	export CCACHE_BASEDIR=$BUILD CCACHE_NOHASHDIR=1
	mk+=(CC="ccache gcc")
fi

mkdir -p "$obj" "$out"
frags=("$frag")
case $flavour in
ksm|series) frags+=("$TOP/kernel/config/series.config") ;;
ksm-kasan) frags+=("$TOP/kernel/config/series.config" "$TOP/kernel/config/kasan.config") ;;
matrix-* | stock-matrix-*)
	# series.config's tests need KUnit, which Debian's kernels lack.
	[ -n "$base" ] || frags+=("$TOP/kernel/config/series.config")
	frags+=("$mfrag") ;;
*-bench) frags+=("$TOP/kernel/config/bench.config") ;;
esac
if [ "$flavour" = noksm ]; then
	printf 'CONFIG_KSM=n\n' > "$obj/noksm.config"
	frags+=("$obj/noksm.config")
fi
if [ -n "$base" ]; then
	# Debian's own configuration, then our fragment alone: samepage.config
	# describes the test kernel, not a distribution's.
	[ -f "$DEBIAN_CONFIGS/$base.xz" ] ||
		die "no $DEBIAN_CONFIGS/$base.xz (apt-get install linux-config-6.12)"
	xzcat "$DEBIAN_CONFIGS/$base.xz" > "$obj/.config"
	frags=("$mfrag")
else
	"${mk[@]}" tinyconfig >/dev/null
fi
(cd "$obj" && KCONFIG_CONFIG=.config \
	"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" .config \
	"${frags[@]}" >/dev/null)
"${mk[@]}" olddefconfig >/dev/null

# Every option the fragments ask for must be in the final config; but a
# tree part way through the series lacks the options of later patches.
bad=0
[ "$flavour" = series ] ||
while IFS= read -r line; do
	case $line in CONFIG_*=*) ;; *) continue ;; esac
	sym=${line%%=*} val=${line#*=}
	if [ "$val" = n ]; then
		grep -qx "$sym=.*" "$obj/.config" && { echo "config: $sym is set, want n" >&2; bad=1; }
	else
		grep -qxF "$line" "$obj/.config" || { echo "config: want $line, got: $(grep "^$sym=\|^# $sym " "$obj/.config" || echo unset)" >&2; bad=1; }
	fi
done < <(cat "${frags[@]}" | awk '{ last[$0 ~ /^CONFIG_/ ? substr($0, 1, index($0, "=")) : NR] = $0 } END { for (k in last) print last[k] }')
[ "$bad" = 0 ] || die "config fragment did not take ($flavour)"

note "building $flavour kernel in $obj"
"${mk[@]}" bzImage
cp "$obj/arch/x86/boot/bzImage" "$out/bzImage"
cp "$obj/.config" "$out/config"
# The source tree the image was built from, for the drift check of make
# test (export-series.sh --check).
git -C "$src" rev-parse HEAD^{tree} > "$out/tree"
note "$out/bzImage"
