#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build one Slurm release into a private prefix, once, and cache it. The
# test harness runs that release's daemons and commands on loopback
# (auth/none, cred/none, so no munge), and configure builds the plugin
# against the kept source tree (internal src/ headers and the generated
# config.h are not installed by `make install`).
#
# Usage: slurm-release.sh [--cache DIR] VERSION
#        slurm-release.sh [--cache DIR] --check VERSION
#                                       (exit 0 if built or buildable here)
#        slurm-release.sh --list        (the releases it can build)
# Prints the release directory on the last line of stdout:
#   DIR/src/      the unpacked, configured and built source tree
#   DIR/prefix/   what `make install` put there (bin, sbin, lib/slurm, include)
#   DIR/stamp     version, tarball checksum and configure line of that build;
#                 written last, so a build that stopped half-way is redone
#
# Where the sources come from (22.05.8 is the installed Debian Slurm and is
# prepared by prepare-slurm-source.sh instead):
#   24.11.5  Debian's upstream tarball in the pool of slurm-wlm (Debian 13's
#            release), from the archive this machine's own apt sources name;
#            no host is named here
#   25.11.7, 26.05.3  the vendored tarballs in ../shared/vendor beside the
#            source tree ($K8S_CONS_TRES_VENDOR), checked against its SHA256SUMS;
#            SchedMD's release tarball slurm-VERSION.tar.bz2 is taken too when
#            SHA256SUMS lists it (and no .tar.gz of that release)
#
# Exit status: 0 built (or cached); 3 the release's sources are not on this
# machine at all (no vendor directory: a clone without ../shared/vendor),
# with a message saying how to provide them: testsuite/run-tests skips that
# release then; 1 any other failure (a vendor directory that is there but
# lacks the release, a bad checksum, a failed fetch or build).
#
# K8S_SLURM_MAKE_JOBS: parallel make jobs (default 2: the machine is shared).
set -eu

say() { echo "slurm-release: $*" >&2; }
die() { say "error: $*"; exit 1; }

top=$(cd "$(dirname "$0")/.." && pwd)
cache="${K8S_CONS_TRES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/k8s-cons-tres}"
vendor="${K8S_CONS_TRES_VENDOR:-$top/../shared/vendor}"
jobs="${K8S_SLURM_MAKE_JOBS:-2}"
releases="24.11.5 25.11.7 26.05.3"
version=""
check=""
while [ $# -gt 0 ]; do
	case "$1" in
	--cache) [ $# -ge 2 ] || die "--cache needs a directory"; cache="$2"; shift 2 ;;
	--check) check=1; shift ;;
	--list) echo "$releases"; exit 0 ;;
	-*) die "unknown option '$1'" ;;
	*) [ -z "$version" ] || die "one VERSION only (got '$version' and '$1')"; version="$1"; shift ;;
	esac
done
[ -n "$version" ] || die "usage: slurm-release.sh [--cache DIR] [--check] VERSION (one of: $releases)"

# The vendored releases' sources are not here at all: say how to provide
# them and exit 3 (the caller may skip the release).
unavailable() {
	say "Slurm $version is not available: $vendor/SHA256SUMS not found (the vendored sources, shared/vendor beside the source tree, are not on this machine)."
	say "  To provide it: K8S_CONS_TRES_VENDOR=DIR, a directory holding slurm-$version.tar.gz (or SchedMD's release tarball slurm-$version.tar.bz2) and a SHA256SUMS file listing its sha256 as sha256sum prints it."
	exit 3
}

# Each release: where its tarball comes from and what it must hash to.
# 24.11.5's checksum is the one Debian's signed Sources index of trixie lists
# for slurm-wlm_24.11.5.orig.tar.gz (its .dsc is not served, so apt-get
# source cannot be used).
case "$version" in
24.11.5) origin=debian; tarball=slurm-wlm_24.11.5.orig.tar.gz
	sha256=e1a5547edd212c38b5e3230a284133f777b32746551f094aaa81cc4af375e332 ;;
25.11.7 | 26.05.3) origin=vendor
	if [ ! -f "$vendor/SHA256SUMS" ]; then
		# No vendor directory here (or an empty one): a cached build is
		# still used, as its stamp records the checksum it was built from.
		[ -d "$vendor" ] && [ -n "$(ls -A "$vendor" 2>/dev/null)" ] &&
			die "$vendor/SHA256SUMS not found: the vendor directory lacks its checksums"
		tarball="" sha256=""
	else
		for tarball in slurm-$version.tar.gz slurm-$version.tar.bz2; do
			sha256=$(awk -v f="$tarball" '$2 == f || $2 == "*" f { print $1 }' "$vendor/SHA256SUMS")
			[ -z "$sha256" ] || break
		done
		[ -n "$sha256" ] || die "slurm-$version.tar.gz is not listed in $vendor/SHA256SUMS"
	fi ;;
22.05.8) die "22.05.8 is the installed Debian Slurm: configure prepares its source with build-aux/prepare-slurm-source.sh" ;;
*) die "unknown Slurm release '$version' (known: $releases; 22.05.8 is the installed one)" ;;
esac

dir="$cache/slurm-$version"
src="$dir/src"
prefix="$dir/prefix"
stamp="$dir/stamp"
log="$dir/build.log"
# Keep in step with the configure call below (the stamp records this line).
# --disable-static: no .a of every library and plugin, which nothing here
# links, so libtool compiles each source once: configure, make -j2 and
# make install of 26.05.3 took 179 and 189 s against 268 and 258 s with
# the static ones, on 2 cores (run A B A B).
configure_line="./configure --prefix=$prefix --enable-multiple-slurmd --without-munge --disable-static"
want=$(printf 'version %s\nsha256 %s\nconfigure %s\n' "$version" "$sha256" "$configure_line")

# built: the stamp says this release was built from this tarball with this
# configure line (any tarball when the vendored one is not here to say).
built() {
	[ -f "$stamp" ] && [ -x "$prefix/sbin/slurmctld" ] || return 1
	if [ -z "$sha256" ]; then
		[ "$(grep -v -e '^seconds ' -e '^sha256 ' "$stamp")" = "$(echo "$want" | grep -v '^sha256 ')" ]
	else
		[ "$(grep -v '^seconds ' "$stamp")" = "$want" ]
	fi
}
[ "$origin" != vendor ] || [ -n "$sha256" ] || built || unavailable
[ -z "$check" ] || exit 0

mkdir -p "$dir" || die "cannot create $dir"
# One build per release at a time (configure and run-tests may both ask).
exec 9>"$dir/.lock"
flock 9 || die "cannot lock $dir/.lock"

if built; then
	say "using cached Slurm $version in $dir"
	echo "$dir"
	exit 0
fi
rm -f "$stamp"

# ---- fetch and verify ---------------------------------------------------------
verify() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$sha256" ]; }
if [ "$origin" = vendor ]; then
	file="$vendor/$tarball"
	[ -f "$file" ] || die "$file not found (shared/vendor beside the source tree, or K8S_CONS_TRES_VENDOR)"
	verify "$file" || die "$file does not match its SHA256SUMS entry: refusing to build it"
else
	file="$dir/$tarball"
	if [ ! -f "$file" ] || ! verify "$file"; then
		rm -f "$file"
		# The archive URIs of this release's suite, from the machine's apt
		# sources (deb822 and one-line), as prepare-slurm-source.sh derives them;
		# security archives carry no pool of this package.
		codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
		[ -n "$codename" ] || die "cannot tell the Debian release from /etc/os-release"
		uris=$(
			for f in /etc/apt/sources.list.d/*.sources; do
				[ -f "$f" ] || continue
				awk -v rel="$codename" '
					function flush() { if (types ~ /(^| )deb( |$)/ && base) print uris
						types = ""; uris = ""; base = 0 }
					/^[ \t]*$/ { flush(); next }
					/^#/ { next }
					/^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0; next }
					/^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0; next }
					/^Suites:/ { n = split($0, s, " "); for (i = 2; i <= n; i++) if (s[i] == rel) base = 1; next }
					END { flush() }' "$f"
			done
			[ ! -f /etc/apt/sources.list ] || awk -v rel="$codename" '$1 == "deb" {
				for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i ~ /:\/\//) break
				if ($(i + 1) == rel) print $i }' /etc/apt/sources.list
		)
		[ -n "$uris" ] || die "no Debian '$codename' archive found in /etc/apt/sources.list{,.d} to fetch $tarball from"
		for uri in $uris; do
			say "fetching $tarball from the Debian pool of the machine's '$codename' archive"
			# apt's own downloader: apt's proxy settings apply, and it checks the hash.
			if /usr/lib/apt/apt-helper -qq -o APT::Sandbox::User=root download-file \
				"${uri%/}/pool/main/s/slurm-wlm/$tarball" "$file.part" "SHA256:$sha256" >/dev/null; then
				mv "$file.part" "$file"
				break
			fi
			rm -f "$file.part"
		done
		[ -f "$file" ] || die "could not fetch $tarball (or it did not match its checksum) from the Debian pool"
	fi
	verify "$file" || die "$file does not match its checksum"
fi
say "$tarball: sha256 OK"

# ---- unpack, configure, build, install ------------------------------------------
start=$(date +%s)
rm -rf "$src" "$prefix" "$dir/unpack"
mkdir -p "$dir/unpack"
tar -xf "$file" -C "$dir/unpack" || die "cannot unpack $file"
# The top directory differs (slurm-26.05.3/, slurm-slurm-24-11-5-1/): take the only one.
set -- "$dir"/unpack/*/
[ $# -eq 1 ] && [ -f "$1/configure" ] || die "$file does not hold one Slurm source directory"
mv "$1" "$src" && rmdir "$dir/unpack"

fail() { tail -n 30 "$log" >&2; die "$1 failed for Slurm $version; the whole log is $log"; }
say "configuring Slurm $version: $configure_line (log: $log)"
(cd "$src" && ./configure --prefix="$prefix" --enable-multiple-slurmd --without-munge --disable-static) >"$log" 2>&1 ||
	fail "configure"
say "building Slurm $version (make -j$jobs; about 3 minutes on 2 cores)"
(cd "$src" && make -j"$jobs") >>"$log" 2>&1 || fail "make"
(cd "$src" && make install) >>"$log" 2>&1 || fail "make install"
[ -x "$prefix/sbin/slurmctld" ] && [ -x "$prefix/sbin/slurmd" ] && [ -x "$prefix/bin/scontrol" ] ||
	die "make install left no slurmctld/slurmd/scontrol in $prefix"
seconds=$(($(date +%s) - start))
{ echo "$want"; echo "seconds $seconds"; } >"$stamp"
say "Slurm $version ready in $dir (built in ${seconds}s)"
echo "$dir"
