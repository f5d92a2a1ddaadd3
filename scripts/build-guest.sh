#!/bin/bash
# Build the guest's static binaries (our tests, tools and bench, and the
# kernel's KSM selftests from the same tree) and pack the initramfs
# build/guest/initramfs.cpio.gz around busybox-static and tests/init.
set -euo pipefail
. "$(dirname "$0")/common.sh"

src=${1:-$SRC_KSM}
[ -d "$src/tools/testing/selftests/mm" ] || die "no tree at $src: run scripts/prepare-tree.sh"
busybox=/bin/busybox
[ -x "$busybox" ] && file -L "$busybox" | grep -q static ||
	die "busybox-static is not installed (apt-get install busybox-static)"

hdr=$GUEST/hdr
root=$GUEST/root
if [ ! -f "$hdr/.stamp" ] || [ "$src/Makefile" -nt "$hdr/.stamp" ]; then
	note "installing kernel headers into $hdr"
	rm -rf "$hdr"
	make -s -C "$src" O="$GUEST/hdr-obj" ARCH=x86_64 headers_install \
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

# The kernel's own KSM selftests, built as its Makefile builds them.
mm=$src/tools/testing/selftests/mm
cflags=(-static -O2 -w -ftrivial-auto-var-init=zero -U_FORTIFY_SOURCE -no-pie -I "$src"
	-isystem "$hdr/include" -I "$src/tools/include")
gcc "${cflags[@]}" -o "$root/guest/selftests/ksm_functional_tests" \
	"$mm/ksm_functional_tests.c" "$mm/vm_util.c" -lrt -lpthread -lm
gcc "${cflags[@]}" -o "$root/guest/selftests/ksm_tests" \
	"$mm/ksm_tests.c" "$mm/vm_util.c" "$mm/thp_settings.c" \
	-lnuma -lrt -lpthread -lm

# Ours: tests/, tools/ and bench/ each build their C programs into bin/.
make -s -C "$TOP" guest-progs GUEST_BIN="$root/guest/bin" HDR="$hdr/include"

(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) |
	gzip -1 > "$GUEST/initramfs.cpio.gz"
note "$GUEST/initramfs.cpio.gz"
