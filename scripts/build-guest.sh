#!/bin/bash
# Build the guest's static binaries (our tests and bench, and the
# kernel's KSM selftests from the same tree) and pack the initramfs
# build/guest/initramfs.cpio.gz around busybox-static and tests/init.
set -euo pipefail
. "$(dirname "$0")/common.sh"

src=${1:-$SRC_KSM}
[ -d "$src/tools/testing/selftests/mm" ] || die "no tree at $src: run scripts/prepare-tree.sh"

# GUEST_ARCH=i386: a 32-bit guest for make matrix's i386 kernel, built
# with gcc -m32 against i386 kernel headers, around Debian's i386
# busybox-static and libnuma.a (fetched, never installed, by
# install-deps.sh i386). Without ksmtuned and VMS=1: the matrix plan
# runs neither, and their host binaries are 64-bit.
arch=${GUEST_ARCH:-x86_64}
case $arch in
x86_64)
	busybox=/bin/busybox
	[ -x "$busybox" ] && file -L "$busybox" | grep -q static ||
		die "busybox-static is not installed (apt-get install busybox-static)"
	cc=(gcc)
	hdr=$GUEST/hdr
	hdrobj=$GUEST/hdr-obj ;;
i386)
	[ "${VMS:-0}" = 0 ] || die "VMS=1 needs an x86_64 guest"
	pkg=$GUEST/pkg-i386
	rm -rf "$pkg"
	mkdir -p "$pkg"
	for p in busybox-static libnuma-dev; do
		deb=$(find "$BUILD/pkg" -name "${p}_*_i386.deb" 2>/dev/null | sort | tail -n 1 || true)
		[ -n "$deb" ] || die "no $p:i386 package in $BUILD/pkg: run scripts/install-deps.sh i386"
		dpkg-deb -x "$deb" "$pkg"
	done
	busybox=$pkg/bin/busybox
	cc=(gcc -m32 -L "$pkg/usr/lib/i386-linux-gnu")
	echo 'int main(void) { return 0; }' |
		"${cc[@]}" -static -x c -o /dev/null - 2>/dev/null ||
		die "gcc -m32 -static does not link: run scripts/install-deps.sh i386"
	hdr=$GUEST/hdr-i386
	hdrobj=$GUEST/hdr-obj-i386 ;;
*)
	die "GUEST_ARCH=$arch: x86_64 or i386" ;;
esac

root=$GUEST/root
if [ ! -f "$hdr/.stamp" ] || [ "$src/Makefile" -nt "$hdr/.stamp" ]; then
	note "installing kernel headers into $hdr"
	rm -rf "$hdr"
	make -s -C "$src" O="$hdrobj" ARCH="$arch" headers_install \
		INSTALL_HDR_PATH="$hdr" >/dev/null
	touch "$hdr/.stamp"
fi

rm -rf "$root"
mkdir -p "$root"/{bin,dev,proc,sys,tmp,guest/bin,guest/selftests}
cp "$busybox" "$root/bin/busybox"
cp "$TOP/tests/init" "$root/init"
chmod +x "$root/init"
# PLAN=file runs another plan (a subset, while working on a few tests).
cp "${PLAN:-$TOP/tests/plan}" "$root/guest/plan"
# make matrix's sysfs-off kernel boots with samepage.plan=plan-nosysfs.
cp "$TOP/tests/plan-nosysfs" "$root/guest/plan-nosysfs"
# make test SOAK=SECONDS boots with samepage.plan=plan-soak.
cp "$TOP/tests/plan-soak" "$root/guest/plan-soak"

# The kernel's own KSM selftests, built as its Makefile builds them.
mm=$src/tools/testing/selftests/mm
cflags=(-static -O2 -w -ftrivial-auto-var-init=zero -U_FORTIFY_SOURCE -no-pie -I "$src"
	-isystem "$hdr/include" -I "$src/tools/include")
"${cc[@]}" "${cflags[@]}" -o "$root/guest/selftests/ksm_functional_tests" \
	"$mm/ksm_functional_tests.c" "$mm/vm_util.c" -lrt -lpthread -lm
"${cc[@]}" "${cflags[@]}" -o "$root/guest/selftests/ksm_tests" \
	"$mm/ksm_tests.c" "$mm/vm_util.c" "$mm/thp_settings.c" \
	-lnuma -lrt -lpthread -lm

# Ours: tests/ and bench/ each build their C programs into bin/.
make -s -C "$TOP" guest-progs GUEST_BIN="$root/guest/bin" HDR="$hdr/include" \
	GUEST_CC="${cc[*]}"

# copy_closure FILE...: each FILE at its own path in the guest, with the
# shared libraries ldd finds for it and the dynamic loader.
copy_closure() {
	local f lib
	for f in "$@"; do
		install -D -m 0755 "$f" "$root$f"
		for lib in $(ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }
					  $1 ~ /^\// { print $1 }'); do
			[ -e "$root$lib" ] || install -D -m 0755 "$lib" "$root$lib"
		done
	done
}

# ksmtuned (tests/ksm_tuned.c): Debian's package, unchanged, fetched by
# install-deps.sh (never installed on the host: its service would tune the
# host's KSM), with what the script runs beyond busybox: bash, and procps's
# pgrep and ps (it needs pgrep -d and ps -p LIST -o rsz=). Not in an i386
# guest: the host's bash and procps are 64-bit (ksm_tuned skips).
if [ "$arch" = x86_64 ]; then
	deb=$(find "$BUILD/pkg" -name 'ksmtuned_*.deb' 2>/dev/null | sort | tail -n 1 || true)
	[ -n "$deb" ] || die "no ksmtuned package in $BUILD/pkg: run scripts/install-deps.sh"
	rm -rf "$GUEST/ksmtuned"
	dpkg-deb -x "$deb" "$GUEST/ksmtuned"
	install -D -m 0755 "$GUEST/ksmtuned/usr/sbin/ksmtuned" "$root/usr/sbin/ksmtuned"
	install -D -m 0644 "$GUEST/ksmtuned/etc/ksmtuned.conf" "$root/etc/ksmtuned.conf"
	copy_closure /bin/bash /usr/bin/pgrep /usr/bin/ps
fi

# VMS=1: QEMU with its libraries, TCG module and firmware, and a small VM
# image (VM_KERNEL, by default our bzImage, and tests/vm/init.c as its
# /init) for tests/ksm_vms.c, which skips without them. Off by default:
# it makes the initramfs larger and the run longer (see README).
if [ "${VMS:-0}" = 1 ]; then
	vmk=${VM_KERNEL:-}
	for k in "$BUILD/ksm/bzImage" "$BUILD/stock/bzImage"; do
		[ -n "$vmk" ] || [ ! -f "$k" ] || vmk=$k
	done
	[ -f "$vmk" ] || die "VMS=1: no kernel for the VMs (VM_KERNEL=, or make kernel)"
	qemu=$(command -v qemu-system-x86_64) || die "VMS=1: qemu-system-x86_64 is not installed"
	qlib=/usr/lib/x86_64-linux-gnu/qemu
	copy_closure "$qemu" "$qlib/accel-tcg-x86_64.so"
	for fw in /usr/share/seabios/bios-256k.bin /usr/share/qemu/kvmvapic.bin \
		  /usr/share/qemu/linuxboot_dma.bin; do
		install -D -m 0644 "$(readlink -f "$fw")" "$root$fw"
	done
	vm=$GUEST/vm-root
	rm -rf "$vm"
	mkdir -p "$vm"/{dev,proc} "$root/guest/vm"
	gcc -static -O2 -Wall -Wextra -Werror -o "$vm/init" "$TOP/tests/vm/init.c"
	(cd "$vm" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) |
		gzip -9 > "$root/guest/vm/initramfs.cpio.gz"
	cp "$vmk" "$root/guest/vm/bzImage"
	[ -n "${PLAN:-}" ] || grep -v '^#' "$TOP/tests/plan-vms" >> "$root/guest/plan"
	note "VMS=1: QEMU and a VM image ($vmk) in the guest"
fi

(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) |
	gzip -1 > "$GUEST/initramfs.cpio.gz"
note "$GUEST/initramfs.cpio.gz"
