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
	job_list|last_node_update|slurmctld_config) ;;
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
# Every symbol it needs must come from a library it links or from Slurm
# itself (libslurmfull, slurmctld): a missing one would only show when
# slurmctld first calls it, as a "symbol lookup error" that kills it.
slurmlib=$(dirname "$(find /usr/lib -name libslurmfull.so -path '*slurm*' | head -n1)")/libslurmfull.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{ nm -D --defined-only "$slurmlib" /usr/sbin/slurmctld 2>/dev/null
  for lib in $(ldd "$so" | awk '$3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do nm -D --defined-only "$lib"; done
} | awk '{ print $NF }' | sed 's/@.*//' | sort -u > "$tmp/provided"
nm -D --undefined-only "$so" | awk '{ print $NF }' | sed 's/@.*//' | sort -u > "$tmp/needed"
missing=$(comm -23 "$tmp/needed" "$tmp/provided" |
	grep -v -e '^_ITM_' -e '^__gmon_start__$' -e '^_Jv_' -e '^__cxa_finalize$' || true)
if [ -n "$missing" ]; then
	echo "FAIL: symbols neither linked nor provided by Slurm:"
	echo "$missing" | sed 's/^/    /'
	fail=1
fi
[ $fail -eq 0 ] && echo "PASS: $so exports exactly $(echo "$exports" | wc -l) Slurm symbols and resolves all it needs"
exit $fail
