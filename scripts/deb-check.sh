#!/bin/bash
# deb-check.sh: boot the kernel make deb packaged, as the package has it.
# The linux-image package of FLAVOUR (default cloud-amd64) is unpacked
# into build/deb/FLAVOUR/root; its vmlinuz boots under QEMU with the
# matrix guest, to which the package's zram module and what zram needs
# are added (decompressed, in the order modprobe would load them; the
# guest's /init loads them), and tests/plan-matrix runs with the
# expected skips of the matching matrix configuration. Logs in
# build/logs/deb-FLAVOUR/.
set -euo pipefail
. "$(dirname "$0")/common.sh"

flavour=${FLAVOUR:-cloud-amd64}
dir=$BUILD/deb/$flavour
image=$(ls "$dir"/linux-image-*.deb 2>/dev/null | grep -v -- '-dbg_' | head -n 1)
[ -n "$image" ] || die "no linux-image package in $dir: make deb FLAVOUR=$flavour"
root=$dir/root
rm -rf "$root"
dpkg-deb -x "$image" "$root"
kver=$(ls "$root/lib/modules")
[ -f "$root/boot/vmlinuz-$kver" ] || die "no boot/vmlinuz-$kver in $image"

# The kernel as boot.sh finds a flavour's: build/deb-FLAVOUR/bzImage.
kflavour=deb-$flavour
mkdir -p "$BUILD/$kflavour"
cp "$root/boot/vmlinuz-$kver" "$BUILD/$kflavour/bzImage"
cp "$root/boot/config-$kver" "$BUILD/$kflavour/config"

# zram's modules in load order, from the package's own modules.dep.
depmod -b "$root" "$kver"
mapfile -t mods < <(modprobe -d "$root" -S "$kver" --show-depends zram |
	sed -n 's/^insmod \([^ ]*\).*/\1/p')
[ "${#mods[@]}" -gt 0 ] || die "zram is not a module of $kver"

guest=$BUILD/guest-$kflavour
extra=$guest/extra
rm -rf "$guest"
mkdir -p "$extra/guest" "$extra/lib/modules"
GUEST=$BUILD/guest-matrix PLAN=$TOP/tests/plan-matrix \
	"$TOP/scripts/build-guest.sh" > "$dir/guest.log" 2>&1 ||
	die "could not build the matrix guest (see $dir/guest.log)"
: > "$extra/guest/modules.load"
for m in "${mods[@]}"; do
	name=$(basename "$m")
	name=/lib/modules/${name%.xz}
	case $m in
	*.xz) xz -dc "$m" > "$extra$name" ;;
	*) cp "$m" "$extra$name" ;;
	esac
	echo "$name" >> "$extra/guest/modules.load"
done
note "modules for the guest: $(tr '\n' ' ' < "$extra/guest/modules.load")"
# A second archive after the guest's: the kernel unpacks both.
cp "$BUILD/guest-matrix/initramfs.cpio.gz" "$guest/initramfs.cpio.gz"
(cd "$extra" && find . | cpio -o -H newc --quiet | gzip -9) \
	>> "$guest/initramfs.cpio.gz"

name=debian-${flavour%-amd64}
[ "$flavour" = amd64 ] && name=debian
[ "$flavour" = rt-amd64 ] && name=debian-rt
skips=/dev/null
[ -f "$TOP/tests/skips-$name" ] && skips=$TOP/tests/skips-$name
EXPECTED_SKIPS=$skips GUEST=$guest \
	LOGS=$BUILD/logs/$kflavour "$TOP/scripts/run-tests.sh" "$kflavour"
