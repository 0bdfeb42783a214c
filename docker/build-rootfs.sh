#!/usr/bin/env bash
# Build the root filesystem the CPU images start from, without any container registry:
# debootstrap a minimal Debian (packages from the Debian mirror), trim it, and tar it up for
# `docker import` (byog/images/build.py does the import and labels the result).
#
#   docker/build-rootfs.sh OUT.tar [EXTRA_PACKAGES...]
#
# The base package set is what the CPU vLLM wheel and a CPython 3.11 built on Debian 12 load at
# run time (found with readelf over the installed environment: libnuma for vLLM's _C, libgomp
# for OpenMP, sqlite/readline/ncurses/nsl for the interpreter's own extension modules) plus g++,
# which torch.compile (vLLM's default, non-eager mode) calls to build its CPU kernels, and the
# suite's python3: a venv made from the distribution's Python runs on it (byog/images/host_python.py).
# Env: DEBIAN_SUITE (default bookworm, the suite the host's Python was built on),
#      DEBIAN_MIRROR (default: the first Debian URI in this machine's apt sources, else
#      debootstrap's own default).
set -euo pipefail

out="${1:?usage: build-rootfs.sh OUT.tar [EXTRA_PACKAGES...]}"
shift
suite="${DEBIAN_SUITE:-bookworm}"
apt_mirror() {  # the mirror apt already uses here: the same packages, the same trust
    sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1
}
mirror="${DEBIAN_MIRROR:-$(apt_mirror)}"
base_packages="ca-certificates,libnuma1,libgomp1,libsqlite3-0,libreadline8,libncursesw6,libnsl2,libtirpc3,g++,python3"
packages="$base_packages"
for extra in "$@"; do packages="$packages,$extra"; done

if ! command -v debootstrap >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

work="$(mktemp -d "${TMPDIR:-/var/tmp}/byog-rootfs.XXXXXX")"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"

debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" ${mirror:+"$mirror"} >"$work/debootstrap.log" 2>&1 || {
    tail -n 30 "$work/debootstrap.log" >&2
    exit 1
}
# Nothing in an image needs the package lists, caches, docs or man pages.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
       "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
       "$rootfs"/var/log/*.log "$rootfs"/var/cache/debconf/*-old
printf '%s\n' "$suite" "$packages" >"$rootfs/etc/byog-rootfs"

tmp_out="$out.partial"
tar --numeric-owner -C "$rootfs" -cf "$tmp_out" .
mv "$tmp_out" "$out"
echo "build-rootfs: wrote $out ($(du -h "$out" | cut -f1)) from $suite with $packages"
