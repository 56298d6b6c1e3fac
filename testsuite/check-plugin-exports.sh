#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The plugin must export only what Slurm's loader looks up: no C++, RapidJSON
# or core symbol may leak into slurmctld's symbol namespace.
set -eu
so="${1:-.libs/select_k8s_cons_tres.so}"
[ -f "$so" ] || { echo "FAIL: $so not built"; exit 1; }
exports=$(nm -D --defined-only "$so" | awk '{ print $NF }' | sort)
fail=0
for sym in $exports; do
	case "$sym" in
	plugin_name|plugin_type|plugin_id|plugin_version|init|fini) ;;
	select_p_*) ;;
	job_list|last_node_update) ;;
	*) echo "FAIL: unexpected exported symbol: $sym"; fail=1 ;;
	esac
done
count=$(echo "$exports" | grep -c '^select_p_' || true)
if [ "$count" -ne 36 ]; then
	echo "FAIL: expected 36 select_p_* exports, found $count"
	fail=1
fi
for sym in plugin_name plugin_type plugin_id plugin_version init fini; do
	echo "$exports" | grep -qx "$sym" || { echo "FAIL: $sym is not exported"; fail=1; }
done
[ $fail -eq 0 ] && echo "PASS: $so exports exactly $(echo "$exports" | wc -l) Slurm symbols"
exit $fail
