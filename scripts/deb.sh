#!/bin/bash
# deb.sh: Debian binary packages of our kernel (make deb), built by the
# kernel's own bindeb-pkg from Debian's configuration of FLAVOUR (amd64,
# the default; cloud-amd64; rt-amd64: package linux-config-6.12), changed
# only in its release suffix (-samepage-FLAVOUR, so that it installs beside
# the distribution's kernels) and without debug info (no -dbg package, and
# this machine has no pahole for BTF). The packages (linux-image,
# linux-headers, linux-libc-dev) land in build/deb/FLAVOUR/, with
# contents.txt listing what each holds.
#
# Every module of the flavour is built: cloud-amd64 has about 1,100,
# amd64 and rt-amd64 about 4,000 (see the README for the times here).
set -euo pipefail
. "$(dirname "$0")/common.sh"

flavour=${FLAVOUR:-amd64}
case $flavour in
amd64 | cloud-amd64) base=config.amd64_none_$flavour ;;
rt-amd64) base=config.amd64_rt_amd64 ;;
*) die "FLAVOUR is amd64, cloud-amd64 or rt-amd64, not '$flavour'" ;;
esac
[ -f "$DEBIAN_CONFIGS/$base.xz" ] ||
	die "no $DEBIAN_CONFIGS/$base.xz (apt-get install linux-config-6.12)"
for tool in dpkg-buildpackage dh_listpackages fakeroot rsync bc kmod cpio; do
	command -v "$tool" >/dev/null ||
		die "no $tool: scripts/install-deps.sh installs what make deb needs"
done

"$TOP/scripts/prepare-tree.sh"
src=$SRC_KSM
obj=$src/obj-deb-$flavour
out=$BUILD/deb/$flavour
mkdir -p "$obj"
mk=(make -C "$src" O="$obj" ARCH=x86_64 -j"$JOBS")
if command -v ccache >/dev/null; then
	export CCACHE_DIR=${CCACHE_DIR:-$BUILD/ccache}
	export CCACHE_BASEDIR=$BUILD CCACHE_NOHASHDIR=1
	mk+=(CC="ccache gcc")
fi

xzcat "$DEBIAN_CONFIGS/$base.xz" > "$obj/.config"
cat > "$obj/samepage-deb.config" <<EOF
CONFIG_LOCALVERSION="-samepage-$flavour"
CONFIG_LOCALVERSION_AUTO=n
CONFIG_DEBUG_INFO_NONE=y
EOF
(cd "$obj" && KCONFIG_CONFIG=.config \
	"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" .config \
	samepage-deb.config >/dev/null)
"${mk[@]}" -s olddefconfig
grep -q '^CONFIG_KSM=y' "$obj/.config" || die "CONFIG_KSM is not set in $base"

# bindeb-pkg leaves its packages in the object tree's parent directory.
rm -f "$src"/linux-*.deb "$src"/linux-*.buildinfo "$src"/linux-*.changes
note "building the $flavour packages in $obj"
start=$(date +%s)
# LOCALVERSION= keeps setlocalversion from adding "+" for the git tree
# the source lives in. The packages' version names the kernel's and our
# commit, which the installed package then tells (dpkg -l
# 'linux-image-*samepage*'). -d: debian/control also names a cross
# compiler package (gcc-x86-64-linux-gnu) that a native build does not
# use; debian/rules runs debhelper's dh_listpackages.
pkgver=$("${mk[@]}" -s kernelversion)-samepage.$(git -C "$TOP" rev-parse --short HEAD)
"${mk[@]}" bindeb-pkg KDEB_SOURCENAME=linux-samepage LOCALVERSION= \
	KDEB_PKGVERSION="$pkgver" DPKG_FLAGS=-d >"$obj/deb.log" 2>&1 ||
	{ tail -n 30 "$obj/deb.log" >&2; die "bindeb-pkg failed (see $obj/deb.log)"; }
rm -rf "$out"
mkdir -p "$out"
mv "$src"/linux-*.deb "$out/"
rm -f "$src"/linux-*.buildinfo "$src"/linux-*.changes
{
	echo "# make deb FLAVOUR=$flavour: $(($(date +%s) - start)) s"
	for deb in "$out"/*.deb; do
		echo "## $(basename "$deb"): $(du -h "$deb" | cut -f1)"
		dpkg-deb --field "$deb" Package Version Installed-Size
		# Files only, the first 40 of them (awk reads to the end: no
		# broken pipe under pipefail).
		dpkg-deb --contents "$deb" | awk '$6 !~ /\/$/ { n++;
			if (n <= 40) print "  " $6 }
			END { print "  (" n " files)" }'
	done
} > "$out/contents.txt"
ls -l "$out"
note "packages in $out (contents.txt lists them)"
