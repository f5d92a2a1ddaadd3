#!/bin/bash
# Install the Debian packages the pipeline needs, when any is missing.
# install-deps.sh i386: also what a 32-bit x86 guest needs (make matrix's
# i386 configuration, never make test): gcc -m32's libraries, and Debian's
# i386 busybox-static and libnuma-dev, fetched below.
# install-deps.sh deb: also what make deb needs to build packages.
set -euo pipefail
. "$(dirname "$0")/common.sh"

i386=
[ "${1:-}" = i386 ] && i386=1
deb=
[ "${1:-}" = deb ] && deb=1
pkgs=(linux-source-6.12 linux-config-6.12 build-essential flex bison bc
      libelf-dev libssl-dev
      cpio xz-utils gzip file ccache qemu-system-x86 busybox-static
      libnuma-dev gnuplot-nox git python3-ply python3-git procps)
[ -z "$i386" ] || pkgs+=(gcc-multilib)
# make deb: what the kernel's bindeb-pkg runs.
[ -z "$deb" ] || pkgs+=(dpkg-dev debhelper fakeroot rsync kmod)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
export DEBIAN_FRONTEND=noninteractive
if [ "${#missing[@]}" -gt 0 ]; then
	echo ">> installing: ${missing[*]}" >&2
	[ "$(id -u)" = 0 ] || { echo "error: need root to install: ${missing[*]}" >&2; exit 1; }
	apt_update
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Fetched into build/pkg, never installed: ksmtuned's service would start
# tuning this host's KSM. build-guest.sh unpacks it into the guest.
# The i386 ones neither: the guest needs only their busybox and libnuma.a,
# and installing libnuma-dev:i386 would pull in libc6:i386 and upgrade the
# host's amd64 libraries to stay in step with it.
fetch=(ksmtuned)
if [ -n "$i386" ]; then
	fetch+=(busybox-static:i386 libnuma-dev:i386)
	if ! dpkg --print-foreign-architectures | grep -qx i386; then
		[ "$(id -u)" = 0 ] || { echo "error: need root for dpkg --add-architecture i386" >&2; exit 1; }
		echo ">> adding dpkg architecture i386 (for apt-get download)" >&2
		dpkg --add-architecture i386
		apt_update
	fi
fi
mkdir -p "$BUILD/pkg"
for p in "${fetch[@]}"; do
	# NAME:ARCH is NAME_VERSION_ARCH.deb once fetched.
	glob="${p}_*.deb"
	[ "$p" = "${p%:*}" ] || glob="${p%:*}_*_${p#*:}.deb"
	compgen -G "$BUILD/pkg/$glob" >/dev/null && continue
	echo ">> fetching (not installing): $p" >&2
	if ! (cd "$BUILD/pkg" && apt-get download -qq "$p" 2>/dev/null); then
		[ "$(id -u)" = 0 ] || { echo "error: cannot fetch $p; as root, apt-get update first" >&2; exit 1; }
		apt_update
		(cd "$BUILD/pkg" && apt-get download -qq "$p")
	fi
done
