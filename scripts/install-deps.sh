#!/bin/bash
# Install the Debian packages the pipeline needs, when any is missing.
set -euo pipefail

pkgs=(linux-source-6.12 build-essential flex bison bc libelf-dev libssl-dev
      cpio xz-utils gzip file ccache qemu-system-x86 busybox-static
      libnuma-dev gnuplot-nox git python3-ply procps)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
export DEBIAN_FRONTEND=noninteractive
if [ "${#missing[@]}" -gt 0 ]; then
	echo ">> installing: ${missing[*]}" >&2
	[ "$(id -u)" = 0 ] || { echo "error: need root to install: ${missing[*]}" >&2; exit 1; }
	apt-get update -qq
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Fetched into build/pkg, never installed: ksmtuned's service would start
# tuning this host's KSM. build-guest.sh unpacks it into the guest.
. "$(dirname "$0")/common.sh"
fetch=(ksmtuned)
mkdir -p "$BUILD/pkg"
for p in "${fetch[@]}"; do
	ls "$BUILD/pkg/${p}"_*.deb >/dev/null 2>&1 && continue
	echo ">> fetching (not installing): $p" >&2
	if ! (cd "$BUILD/pkg" && apt-get download -qq "$p" 2>/dev/null); then
		[ "$(id -u)" = 0 ] || { echo "error: cannot fetch $p; as root, apt-get update first" >&2; exit 1; }
		apt-get update -qq
		(cd "$BUILD/pkg" && apt-get download -qq "$p")
	fi
done
