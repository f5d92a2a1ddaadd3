#!/bin/bash
# matrix.sh [NAME...]: build our tree under each kernel configuration of
# the matrix and boot it with a short plan (tests/plan-matrix: the kernel's
# KSM selftests and a smoke run of ours). "test" is the test config (make
# test's kernel); every other NAME is the test config with the fragment
# kernel/config/matrix/NAME.config on top. One line a configuration, then
# "N passed, N failed". Logs in build/logs/matrix/NAME/.
#
# A configuration passes when it builds and its guest run reports no
# failure and no splat. The configurations of one architecture share an
# object tree (scripts/build-kernel.sh), so after the first build of each
# architecture (10-18 minutes here) a configuration takes a few minutes;
# it is not part of make test.
#
# FULL=1 boots each x86_64 configuration with the whole plan
# (tests/plan, the guest make test runs) instead: a configuration's
# tests/skips-NAME lists the whole plan's skips too. Logs in
# build/logs/matrix-full/NAME/.
set -euo pipefail
. "$(dirname "$0")/common.sh"

if [ "$#" -gt 0 ]; then
	names=("$@")
else
	names=(test)
	for f in "$TOP"/kernel/config/matrix/*.config; do
		names+=("$(basename "$f" .config)")
	done
fi

out=$BUILD/logs/matrix${FULL:+-full}
mkdir -p "$out"
pass=0 fail=0

# guest_stale DIR: should the guest in DIR be built (again)? When asked
# (REBUILD_GUEST=1), when there is none, or when a test, the bench or demo
# or the guest build changed since it was built.
guest_stale() {
	[ -n "${REBUILD_GUEST:-}" ] || [ ! -f "$1/initramfs.cpio.gz" ] ||
		[ -n "$(find "$TOP/tests" "$TOP/bench" \
			"$TOP/scripts/build-guest.sh" -newer "$1/initramfs.cpio.gz" \
			-print -quit)" ]
}

# boot_one NAME FLAVOUR: the short plan on FLAVOUR's kernel; 0 if clean.
boot_one() {
	local dir=$out/$1 arch guest=$BUILD/guest-matrix
	[ -z "${FULL:-}" ] || guest=$BUILD/guest-matrix-full
	arch=$(sed -n '1s/^# arch: *//p' "$TOP/kernel/config/matrix/$1.config" 2>/dev/null || true)
	case ${arch:-x86_64} in
	x86_64) ;;
	i386)
		# A 32-bit kernel runs a 32-bit guest of its own (gcc -m32,
		# i386 busybox), under qemu-system-i386.
		guest=$BUILD/guest-matrix-i386
		if guest_stale "$guest"; then
			if ! { "$TOP/scripts/install-deps.sh" i386 &&
			       GUEST_ARCH=i386 GUEST=$guest PLAN=$TOP/tests/plan-matrix \
					"$TOP/scripts/build-guest.sh"; } > "$dir/guest.log" 2>&1; then
				echo "could not build the i386 guest (see guest.log)" > "$dir/why"
				return 1
			fi
		fi ;;
	*)
		echo "no $arch guest userspace (static $arch test binaries)" > "$dir/why"
		return 1 ;;
	esac
	# Without sysfs the suites cannot drive ksmd: a plan of its own.
	local append=
	[ "$1" = sysfs-off ] && append=samepage.plan=plan-nosysfs
	# Skips a configuration is expected to have: tests/skips-NAME.
	local xfail=$TOP/tests/xfail skips=/dev/null
	[ "${arch:-x86_64}" = i386 ] && xfail=$TOP/tests/xfail-i386
	[ -f "$TOP/tests/skips-$1" ] && skips=$TOP/tests/skips-$1
	EXPECTED_SKIPS=$skips XFAIL=$xfail APPEND=$append GUEST=$guest \
		QEMU_ARCH=${arch:-x86_64} LOGS=$dir \
		"$TOP/scripts/run-tests.sh" "$2" > "$dir/report" 2>&1
}

if [ -n "${FULL:-}" ]; then
	if guest_stale "$BUILD/guest-matrix-full"; then
		GUEST=$BUILD/guest-matrix-full "$TOP/scripts/build-guest.sh" \
			>/dev/null 2>&1 ||
			die "could not build the whole plan's guest (scripts/build-guest.sh)"
	fi
elif guest_stale "$BUILD/guest-matrix"; then
	GUEST=$BUILD/guest-matrix PLAN=$TOP/tests/plan-matrix \
		"$TOP/scripts/build-guest.sh" >/dev/null 2>&1 ||
		die "could not build the matrix guest (PLAN=tests/plan-matrix scripts/build-guest.sh)"
fi

for name in "${names[@]}"; do
	flavour=matrix-$name
	[ "$name" = test ] && flavour=ksm
	dir=$out/$name
	mkdir -p "$dir"
	rm -f "$dir/why"
	start=$(date +%s)
	if ! "$TOP/scripts/build-kernel.sh" "$flavour" > "$dir/build.log" 2>&1; then
		fail=$((fail + 1))
		printf 'FAIL  %-20s build (%s s): %s\n' "$name" "$(($(date +%s) - start))" \
			"$(grep -m1 -E 'error|config:' "$dir/build.log" || tail -n1 "$dir/build.log")"
		continue
	fi
	built=$(($(date +%s) - start))
	if boot_one "$name" "$flavour"; then
		pass=$((pass + 1))
		printf 'PASS  %-20s build %s s, %s\n' "$name" "$built" \
			"$(tail -n1 "$dir/report")"
	else
		fail=$((fail + 1))
		printf 'FAIL  %-20s build %s s, guest: %s\n' "$name" "$built" \
			"$(cat "$dir/why" 2>/dev/null || tail -n1 "$dir/report")"
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
