#!/bin/bash
# Install the Debian packages the pipeline needs, when any is missing.
set -euo pipefail

pkgs=(linux-source-6.12 build-essential flex bison bc libelf-dev libssl-dev
      cpio xz-utils gzip file ccache qemu-system-x86 busybox-static
      libnuma-dev gnuplot-nox git python3-ply)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
echo ">> installing: ${missing[*]}" >&2
[ "$(id -u)" = 0 ] || { echo "error: need root to install: ${missing[*]}" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
