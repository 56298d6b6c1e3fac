#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Build select/k8s_cons_tres for one private Slurm release: the release
# itself once (build-aux/slurm-release.sh, cached), then the plugin in
# build-slurm-VERSION beside the tree's own build (configured once), over
# the main build's core and client libraries.
# Prints that build directory. Used by testsuite/run-tests and the demo.
# Usage: release-plugin.sh VERSION
# Exits 3, as slurm-release.sh does, when the release's sources are not on
# this machine (its message says how to provide them).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 1 ] || { echo "usage: release-plugin.sh VERSION" >&2; exit 2; }
v=$1
"$top/build-aux/slurm-release.sh" "$v" >/dev/null || exit $?
dir="$top/build-slurm-$v"
mkdir -p "$dir"
cd "$dir"
[ -f Makefile ] || "$top/configure" --with-slurm="$v" >/dev/null
# The core and client libraries are Slurm-free: link those of the main
# build (build/, when it is configured) instead of compiling them again.
main="$top/build"
if [ -f "$main/Makefile" ]; then
	make -C "$main" -j"$(nproc)" libk8s_cons_tres_sync.la libk8s_cons_tres_client.la libk8s_cons_tres_core.la >/dev/null
	make -j"$(nproc)" select_k8s_cons_tres.la prep_k8s_cons_tres.la \
		K8S_CONS_TRES_LIBS="$main/libk8s_cons_tres_sync.la $main/libk8s_cons_tres_client.la $main/libk8s_cons_tres_core.la" >/dev/null
else
	make -j"$(nproc)" select_k8s_cons_tres.la prep_k8s_cons_tres.la >/dev/null
fi
echo "$dir"
