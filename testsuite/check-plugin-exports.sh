#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The plugin must export only what Slurm's loader looks up: no C++, RapidJSON
# or core symbol may leak into slurmctld's symbol namespace. Its select_p_*
# must be exactly the ones the release's loader requires (node_select_syms[]
# in the Slurm source it was built against), and every symbol it needs must
# come from that release's libslurmfull and slurmctld.
#
# Usage: check-plugin-exports.sh [PLUGIN.so]
# Environment (make check sets them from configure): SLURM_SRC, the Slurm
# source tree; SLURM_PREFIX, where that release's sbin/slurmctld is.
set -eu
so="${1:-.libs/select_k8s_cons_tres.so}"
[ -f "$so" ] || { echo "FAIL: $so not built"; exit 1; }
exports=$(nm -D --defined-only "$so" | awk '{ print $NF }' | sort)
fail=0
for sym in $exports; do
	case "$sym" in
	plugin_name|plugin_type|plugin_id|plugin_version|init|fini) ;;
	select_p_*) ;;
	k8s_cons_tres_gate_v1) ;;	# the launch gate's table, for prep_k8s_cons_tres.so
	job_list|last_job_update|last_node_update|slurmctld_config) ;;
	*) echo "FAIL: unexpected exported symbol: $sym"; fail=1 ;;
	esac
done
for sym in plugin_name plugin_type plugin_id plugin_version init fini; do
	echo "$exports" | grep -qx "$sym" || { echo "FAIL: $sym is not exported"; fail=1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The select_p_* the loader looks up: node_select_syms[] of select.c
# (src/common until 22.05, src/interfaces from 23.02).
select_c=""
for f in "${SLURM_SRC:-}/src/interfaces/select.c" "${SLURM_SRC:-}/src/common/select.c"; do
	[ -n "${SLURM_SRC:-}" ] && [ -f "$f" ] && { select_c=$f; break; }
done
echo "$exports" | grep '^select_p_' > "$tmp/exported" || true
if [ -n "$select_c" ]; then
	sed -n '/node_select_syms\[\] *= *{/,/};/p' "$select_c" |
		grep -o '"select_p_[a-z_]*"' | tr -d '"' | sort > "$tmp/required"
	[ -s "$tmp/required" ] || { echo "FAIL: no node_select_syms[] in $select_c"; fail=1; }
	if ! cmp -s "$tmp/required" "$tmp/exported"; then
		echo "FAIL: select_p_* exported differ from node_select_syms[] of $select_c:"
		comm -3 "$tmp/required" "$tmp/exported" | sed 's/^\t/    exported, not required: /; t; s/^/    required, not exported: /'
		fail=1
	fi
	nreq=$(wc -l < "$tmp/required")
else
	# no source tree named: 22.05's count
	nreq=36
	if [ "$(wc -l < "$tmp/exported")" -ne 36 ]; then
		echo "FAIL: expected 36 select_p_* exports, found $(wc -l < "$tmp/exported") (set SLURM_SRC to check against a release)"
		fail=1
	fi
fi

# Every symbol it needs must come from a library it links or from Slurm
# itself (libslurmfull, slurmctld): a missing one would only show when
# slurmctld first calls it, as a "symbol lookup error" that kills it.
if [ -n "${SLURM_PREFIX:-}" ] && [ "$SLURM_PREFIX" != /usr ] && [ -x "$SLURM_PREFIX/sbin/slurmctld" ]; then
	slurmctld=$SLURM_PREFIX/sbin/slurmctld
	slurmlib=$(find "$SLURM_PREFIX/lib" -name libslurmfull.so | head -n1)
else
	slurmctld=/usr/sbin/slurmctld
	slurmlib=$(dirname "$(find /usr/lib -name libslurmfull.so -path '*slurm*' | head -n1)")/libslurmfull.so
fi
{ nm -D --defined-only "$slurmlib" "$slurmctld" 2>/dev/null
  for lib in $(ldd "$so" | awk '$3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do nm -D --defined-only "$lib"; done
} | awk '{ print $NF }' | sed 's/@.*//' | sort -u > "$tmp/provided"
nm -D --undefined-only "$so" | awk '{ print $NF }' | sed 's/@.*//' | sort -u > "$tmp/needed"
missing=$(comm -23 "$tmp/needed" "$tmp/provided" |
	grep -v -e '^_ITM_' -e '^__gmon_start__$' -e '^_Jv_' -e '^__cxa_finalize$' || true)
if [ -n "$missing" ]; then
	echo "FAIL: symbols neither linked nor provided by Slurm ($slurmlib, $slurmctld):"
	echo "$missing" | sed 's/^/    /'
	fail=1
fi
# No user or group name lookup from the Slurm-facing code, which runs under
# slurmctld's locks: it is NSS, possibly LDAP, and can block for seconds.
# The core labels claims from the uid on its writer's threads instead.
nss=$(grep -x -e 'uid_to_string' -e 'uid_to_string_or_null' -e 'uid_to_string_cached' \
	-e 'uid_from_string' -e 'user_from_job' -e 'gid_to_string' -e 'gid_to_string_or_null' \
	-e 'gid_from_string' -e 'group_from_job' "$tmp/needed" || true)
if [ -n "$nss" ]; then
	echo "FAIL: the plugin looks up user or group names (blocking NSS calls under slurmctld's locks):"
	echo "$nss" | sed 's/^/    /'
	fail=1
fi
# Data only slurmctld defines is bound when the .so is loaded (functions only
# when called): 22.05's slurmd and commands load every select plugin, so such
# data must be defined tentatively in the plugin itself (select_common.c).
nm -D --defined-only "$slurmctld" 2>/dev/null | awk '$2 ~ /^[BDGRS]$/ { print $NF }' | sed 's/@.*//' | sort -u > "$tmp/ctld_data"
nm -D --defined-only "$slurmlib" 2>/dev/null | awk '{ print $NF }' | sed 's/@.*//' | sort -u > "$tmp/lib"
ctld_only=$(comm -12 "$tmp/needed" "$tmp/ctld_data" | comm -23 - "$tmp/lib")
if [ -n "$ctld_only" ]; then
	echo "FAIL: data only slurmctld defines, needed at load time where slurmctld is not:"
	echo "$ctld_only" | sed 's/^/    /'
	fail=1
fi
[ $fail -eq 0 ] && echo "PASS: $so exports exactly $(echo "$exports" | wc -l) Slurm symbols ($nreq select_p_*, as its release's loader requires) and resolves all it needs"

# The launch gate's PrEp plugin, built beside it: exactly what the PrEp
# loader looks up (syms[] of prep.c), and nothing needed from slurmctld,
# since slurmd and slurmstepd load it too.
prep=$(dirname "$so")/prep_k8s_cons_tres.so
[ -f "$prep" ] || { echo "FAIL: $prep not built"; exit 1; }
pexports=$(nm -D --defined-only "$prep" | awk '{ print $NF }' | sort)
prep_c=""
for f in "${SLURM_SRC:-}/src/interfaces/prep.c" "${SLURM_SRC:-}/src/common/prep.c"; do
	[ -n "${SLURM_SRC:-}" ] && [ -f "$f" ] && { prep_c=$f; break; }
done
if [ -n "$prep_c" ]; then
	sed -n '/syms\[\] *= *{/,/};/p' "$prep_c" | grep -o '"prep_p_[a-z_]*"' | tr -d '"' | sort > "$tmp/prep_required"
else
	printf '%s\n' prep_p_epilog prep_p_epilog_slurmctld prep_p_prolog prep_p_prolog_slurmctld \
		prep_p_register_callbacks prep_p_required > "$tmp/prep_required"
fi
printf '%s\n' fini init plugin_name plugin_type plugin_version >> "$tmp/prep_required"
sort -o "$tmp/prep_required" "$tmp/prep_required"
if [ "$(echo "$pexports")" != "$(cat "$tmp/prep_required")" ]; then
	echo "FAIL: $prep exports differ from what the PrEp loader looks up${prep_c:+ ($prep_c)}:"
	echo "$pexports" | comm -3 "$tmp/prep_required" - | sed 's/^\t/    exported, not required: /; t; s/^/    required, not exported: /'
	fail=1
fi
{ nm -D --defined-only "$slurmlib"
  for lib in $(ldd "$prep" | awk '$3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do nm -D --defined-only "$lib"; done
} | awk '{ print $NF }' | sed 's/@.*//' | sort -u > "$tmp/prep_provided"
nm -D --undefined-only "$prep" | awk '{ print $NF }' | sed 's/@.*//' | sort -u |
	grep -v -e '^_ITM_' -e '^__gmon_start__$' -e '^_Jv_' -e '^__cxa_finalize$' > "$tmp/prep_needed" || true
pmissing=$(comm -23 "$tmp/prep_needed" "$tmp/prep_provided")
if [ -n "$pmissing" ]; then
	echo "FAIL: $prep needs symbols libslurmfull ($slurmlib) does not provide (slurmd loads it too):"
	echo "$pmissing" | sed 's/^/    /'
	fail=1
fi
[ $fail -eq 0 ] && echo "PASS: $prep exports exactly what the PrEp loader looks up and needs only libslurmfull"
exit $fail
