# SPDX-License-Identifier: GPL-2.0-or-later
"""make install puts the plugin into Slurm's PluginDir, exporting only Slurm's
entry points, and the man pages under the prefix."""
import os
import subprocess
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("K8S_CONS_TRES_BUILDDIR") or TOP / "build")


def test_installed_plugin_exports_only_slurm_symbols(tmp_path):
    assert (BUILD / "Makefile").exists(), "build first: build-aux/build.sh"
    subprocess.run(["make", "-C", str(BUILD), "install", f"DESTDIR={tmp_path}"], check=True,
                   capture_output=True, timeout=300)
    plugindir = subprocess.run(["make", "-s", "-C", str(BUILD), "print-plugindir"], check=True,
                               capture_output=True, text=True).stdout.strip()
    so = tmp_path / plugindir.lstrip("/") / "select_k8s_cons_tres.so"
    assert so.is_file(), list(tmp_path.rglob("*"))
    assert not list(so.parent.glob("*.a")), "no static archive of a plugin"
    res = subprocess.run([str(TOP / "testsuite" / "check-plugin-exports.sh"), str(so)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout
    names = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True,
                           text=True).stdout
    assert "_Z" not in names and "rapidjson" not in names.lower()
    # of the core's own C ABI (k8s_cons_tres_*) only the gate's table leaves it
    ours = {n.split()[-1] for n in names.splitlines() if "k8s_cons_tres_" in n}
    assert ours == {"k8s_cons_tres_gate_v1"}, ours
    # and the man pages (the Debian package is test_package.py's)
    for page in ("man5/k8s_cons_tres.conf.5", "man8/select_k8s_cons_tres.8",
                 "man1/k8s-cons-tres-inspect.1"):
        assert list(tmp_path.rglob(f"share/man/{page}")), page
