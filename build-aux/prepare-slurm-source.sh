#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Prepare a configured Slurm source tree matching the installed slurmctld
# exactly, and cache it. A select plugin only loads into the exact Slurm
# release it was built against, and Slurm's internal headers include the
# generated config.h, so we need the real source, configured the way Debian
# configured it.
#
# Usage: prepare-slurm-source.sh [--cache DIR]
# Prints the path of the configured tree on the last line of stdout.
#
# Where it comes from: the Debian source package of the installed slurmctld
# (apt-get source), through a private apt configuration whose deb-src lines are
# derived from this machine's own Debian apt sources. Nothing in /etc/apt is
# changed and no repository host is named here.
set -eu

say() { echo "prepare-slurm-source: $*" >&2; }
die() { say "error: $*"; exit 1; }

cache="${K8S_CONS_TRES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/k8s-cons-tres}"
while [ $# -gt 0 ]; do
	case "$1" in
	--cache) cache="$2"; shift 2 ;;
	*) die "unknown argument '$1'" ;;
	esac
done

command -v dpkg-query >/dev/null || die "dpkg-query not found: this needs a Debian system (or pass --with-slurm-source=DIR to configure)"
pkgver=$(dpkg-query -W -f='${Version}' slurmctld 2>/dev/null) ||
	die "slurmctld is not installed: apt-get install slurmctld (or run build-aux/install-deps.sh)"
[ -n "$pkgver" ] || die "slurmctld is not installed: apt-get install slurmctld"
srcpkg=$(dpkg-query -W -f='${source:Package}' slurmctld)
srcver=$(dpkg-query -W -f='${source:Version}' slurmctld)
upstream=${srcver%-*}

tree="$cache/$srcpkg-$srcver/$srcpkg-$upstream"
stamp="$tree/.k8s-cons-tres-configured"
if [ -f "$stamp" ]; then
	say "using cached configured source $tree"
	echo "$tree"
	exit 0
fi

command -v dpkg-source >/dev/null || die "dpkg-source not found: apt-get install dpkg-dev"
mkdir -p "$cache/$srcpkg-$srcver"
work="$cache/$srcpkg-$srcver"
apt_dir="$work/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/sources.list.d"

# Derive deb-src entries from the machine's Debian sources: every entry whose
# suite belongs to this release (bookworm, bookworm-updates, bookworm-security).
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || die "cannot tell the Debian release from /etc/os-release"
out="$apt_dir/sources.list.d/derived.sources"
: > "$out"
for f in /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] || continue
	awk -v rel="$codename" '
		function flush() {
			if (types ~ /(^| )deb( |$)/ && suites_ok && uris != "") {
				print "Types: deb-src"; print "URIs: " uris; print "Suites: " suites
				print "Components: " comps; if (signed != "") print "Signed-By: " signed
				print ""
			}
			types = ""; uris = ""; suites = ""; comps = ""; signed = ""; suites_ok = 0
		}
		/^[ \t]*$/ { flush(); next }
		/^#/ { next }
		/^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0; next }
		/^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0; next }
		/^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0
			n = split($0, s, " "); suites_ok = 1
			for (i = 1; i <= n; i++) if (index(s[i], rel) != 1) suites_ok = 0
			next }
		/^Components:/ { sub(/^Components:[ \t]*/, ""); comps = $0; next }
		/^Signed-By:/ { sub(/^Signed-By:[ \t]*/, ""); signed = $0; next }
		END { flush() }
	' "$f" >> "$out"
done
if [ -f /etc/apt/sources.list ]; then
	awk -v rel="$codename" '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i ~ /:\/\//) break
		if (index($(i + 1), rel) == 1) { $1 = "deb-src"; print } }' /etc/apt/sources.list \
		> "$apt_dir/sources.list.d/derived.list"
fi
[ -s "$out" ] || [ -s "$apt_dir/sources.list.d/derived.list" ] ||
	die "no Debian '$codename' entry found in /etc/apt/sources.list{,.d} to derive a deb-src line from"

apt_opts="-o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts=$apt_dir/sources.list.d \
 -o Dir::State::Lists=$apt_dir/lists -o Dir::Cache::Archives=$apt_dir/archives \
 -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root"
say "fetching the source index (private apt state in $apt_dir)"
# shellcheck disable=SC2086
apt-get -q $apt_opts update >&2 || die "apt-get update for deb-src failed (network or apt sources)"
say "downloading source package $srcpkg=$srcver"
# shellcheck disable=SC2086
(cd "$work" && apt-get -q $apt_opts source --download-only "$srcpkg=$srcver" >&2) ||
	die "apt-get source $srcpkg=$srcver failed; the archive may no longer carry this version: pass --with-slurm-source=DIR"
dsc=$(ls "$work"/"$srcpkg"_*.dsc | head -n1)
rm -rf "$tree"
say "extracting with dpkg-source -x (applies Debian's patches)"
(cd "$work" && dpkg-source -q -x "$dsc" "$tree" >&2) || die "dpkg-source -x $dsc failed"

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
say "configuring (about a minute)"
(cd "$tree" && ./configure -q --prefix=/usr --sysconfdir=/etc/slurm \
	--libdir=/usr/lib/"$multiarch" --enable-multiple-slurmd --disable-debug \
	--without-rpath >configure.out 2>&1) ||
	die "configuring Slurm in $tree failed; see $tree/configure.out"
touch "$stamp"
say "ready: $tree"
echo "$tree"
