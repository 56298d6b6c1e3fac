#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The layout's include arrows, one way only:
#   plugin/ -> core/'s C ABI (k8s_cons_tres*.h);   core/ -> nothing of ours outside it;
#   k8s_sync/ -> core/, k8s_client/;        k8s_client/ -> nothing of ours outside it.
# So the generic client knows nothing of the engine, the engine nothing of
# HTTP, Kubernetes or hwloc, and nothing shipped includes testsuite/ (where
# test-only code such as testsuite/support/ lives).
#
# Usage: check-layout.sh [SOURCE_DIR]   (make check passes $(srcdir))
set -eu
top="${1:-${srcdir:-.}}"
fail=0
# forbid DIR PATTERN WHY: no file in DIR includes a path matching PATTERN
forbid() {
	hits=$(grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]+[\"<]($2)" "$top/$1" || true)
	if [ -n "$hits" ]; then
		echo "FAIL: $1 must not include $2 ($3):"
		echo "$hits"
		fail=1
	fi
}
forbid k8s_client 'core/|k8s_sync/|plugin/|tools/|testsuite/' "the generic client knows nothing of the engine"
forbid core 'k8s_client/|k8s_sync/|plugin/|tools/|testsuite/|hwloc' "the engine has no HTTP, no Slurm, no hwloc and no test code"
forbid k8s_sync 'plugin/|tools/|testsuite/' "the sync layer has no Slurm"
forbid plugin 'k8s_client/|k8s_sync/|tools/|testsuite/|core/[^k]|core/k[^8]' "the plugin reaches the engine through its C ABI only"
[ "$fail" = 0 ] && echo "PASS: include arrows point one way"
exit "$fail"
