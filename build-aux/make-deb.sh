#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the Debian package of select/k8s_cons_tres for the Slurm release the
# build tree was configured for, from a tree `make install DESTDIR=ROOT
# prefix=/usr` staged (`make deb` does both). Needs only dpkg-dev.
#
#   make-deb.sh --root ROOT --srcdir DIR --slurm-version 22.05.8 \
#               --version 0.1.0 --plugindir DIR [--outdir DIR]
#
# The package is slurm-k8s-cons-tres-<slurm release>, so the release is in its
# name (slurm-k8s-cons-tres-22.05.8_0.1.0_amd64.deb). It depends on exactly the
# Debian version of that release's Slurm installed at build time (dpkg-query):
# the plugin wraps select/cons_tres of slurm-wlm-basic-plugins and loads only
# into that release, so the package manager refuses any other. Packages for
# several releases conflict with each other (one PluginDir, one command).
set -eu

root= srcdir= slurm_version= version= plugindir= outdir=.
while [ $# -gt 0 ]; do
	case $1 in
	--root) root=$2 ;;
	--srcdir) srcdir=$2 ;;
	--slurm-version) slurm_version=$2 ;;
	--version) version=$2 ;;
	--plugindir) plugindir=$2 ;;
	--outdir) outdir=$2 ;;
	*) echo "make-deb.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift 2
done
for v in root srcdir slurm_version version plugindir; do
	eval "[ -n \"\$$v\" ]" || { echo "make-deb.sh: --$v is required" >&2; exit 2; }
done
die() { echo "make-deb.sh: $*" >&2; exit 1; }
command -v dpkg-deb >/dev/null || die "dpkg-deb not found: apt-get install dpkg-dev"
command -v dpkg-shlibdeps >/dev/null || die "dpkg-shlibdeps not found: apt-get install dpkg-dev"

root=$(cd "$root" && pwd)
srcdir=$(cd "$srcdir" && pwd)
outdir=$(cd "$outdir" && pwd)
pkg=slurm-k8s-cons-tres-$slurm_version
so=$root$plugindir/select_k8s_cons_tres.so
prep=$root$plugindir/prep_k8s_cons_tres.so
[ -f "$so" ] || die "$so missing: stage with make install DESTDIR=$root first"
[ -f "$prep" ] || die "$prep missing: stage with make install DESTDIR=$root first"

# The exact Debian version of the Slurm this was built against; its upstream
# part must be the release configure checked.
slurm_deb=$(dpkg-query -W -f='${Version}' slurmctld 2>/dev/null) ||
	die "slurmctld is not installed (dpkg-query): the package pins the installed Slurm"
case $slurm_deb in
"$slurm_version"-*|"$slurm_version") ;;
*) die "installed slurmctld is $slurm_deb, but the build is for Slurm $slurm_version: reconfigure" ;;
esac
plugins_deb=$(dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins 2>/dev/null) ||
	die "slurm-wlm-basic-plugins is not installed"
[ "$plugins_deb" = "$slurm_deb" ] ||
	die "slurm-wlm-basic-plugins $plugins_deb differs from slurmctld $slurm_deb"

# ---- the tree ---------------------------------------------------------------
rm -f "$root"$plugindir/*.la
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$so" "$prep"
chmod 0644 "$so" "$prep"
bins=""
for b in "$root"/usr/bin/*; do
	[ -f "$b" ] || continue
	strip --strip-unneeded --remove-section=.comment --remove-section=.note "$b"
	bins="$bins $b"
done
# man pages compressed, as Debian ships them
find "$root/usr/share/man" -type f ! -name '*.gz' -exec gzip -9nf {} + 2>/dev/null || true

doc=$root/usr/share/doc/$pkg
mkdir -p "$doc/examples"
# README and the pages it links to, at the same relative paths
cp "$srcdir/README.md" "$srcdir/NEWS" "$doc/"
mkdir -p "$doc/doc"
cp "$srcdir"/doc/*.md "$doc/doc/"
for f in k8s_cons_tres.conf.example slurm.conf.snippet gres.conf.example rbac.yaml rbac-node-discovery.yaml deviceclasses.yaml; do
	cp "$srcdir/etc/$f" "$doc/examples/"
done
# the kustomize base: kubectl apply -k /usr/share/doc/$pkg/examples/kubernetes
cp -R "$srcdir/etc/kubernetes" "$doc/examples/"
{
	echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
	echo "Upstream-Name: select/k8s_cons_tres"
	echo
	echo "Files: *"
	echo "License: GPL-2.0-or-later"
	echo " On Debian systems the full text of the GNU General Public License"
	echo " version 2 is in /usr/share/common-licenses/GPL-2."
} >"$doc/copyright"
find "$root" -type d -exec chmod 0755 {} +
find "$doc" "$root/usr/share/man" -type f -exec chmod 0644 {} + 2>/dev/null || true

# ---- control ------------------------------------------------------------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$pkg" "$pkg" >"$work/debian/control"
# Slurm's own symbols come from the process that loads the plugin, not a
# library: they are not dependencies (and dpkg-shlibdeps says so, harmlessly).
shlibs=$(cd "$work" && dpkg-shlibdeps -O --warnings=0 -e"$so" $bins 2>/dev/null |
	sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || die "dpkg-shlibdeps found no library dependencies"
arch=$(dpkg --print-architecture)
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
rm -rf "$root/DEBIAN"
mkdir -p "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<EOF
Package: $pkg
Version: $version
Architecture: $arch
Maintainer: ${DEBFULLNAME:-select/k8s_cons_tres maintainers} <${DEBEMAIL:-root@localhost}>
Installed-Size: $size
Depends: slurm-wlm-basic-plugins (= $slurm_deb), slurmctld (= $slurm_deb) | slurmd (= $slurm_deb) | slurm-client (= $slurm_deb), $shlibs
Provides: slurm-k8s-cons-tres
Conflicts: slurm-k8s-cons-tres
Replaces: slurm-k8s-cons-tres
Section: admin
Priority: optional
Description: Slurm select plugin sharing nodes with Kubernetes (Slurm $slurm_version)
 select/k8s_cons_tres wraps select/cons_tres: it reads each Kubernetes node's
 CPU and GPU topology from DRA ResourceSlices, keeps the devices pods hold
 away from Slurm jobs, places jobs topology-aware, and posts each allocation
 to Kubernetes as a ResourceClaim.
 .
 Built for Slurm $slurm_version (Debian $slurm_deb) only: it installs into
 $plugindir. Also the k8s-cons-tres-inspect command, the
 manual pages k8s_cons_tres.conf(5), select_k8s_cons_tres(8) and
 k8s-cons-tres-inspect(1), and examples (k8s_cons_tres.conf, slurm.conf and
 gres.conf snippets, the Kubernetes manifests as a kustomize base).
EOF
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's,^\./,,' | LC_ALL=C sort |
	xargs md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

deb=$outdir/${pkg}_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
