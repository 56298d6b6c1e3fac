# SPDX-License-Identifier: GPL-2.0-or-later
"""configure refuses what cannot work, and says how to fix it."""
import os
import subprocess
from pathlib import Path

import pytest

from harness import slurm_release
from conftest import release_unavailable

TOP = Path(__file__).resolve().parents[2]
CONFIGURE = TOP / "configure"


def run_configure(tmp_path, *args, env_extra=None):
    assert CONFIGURE.exists(), "run ./autogen.sh first"
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([str(CONFIGURE), *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)


def fake_slurm_tree(root: Path, version_number: int, configured: bool = True) -> Path:
    for rel in ("slurm/slurm_version.h", "src/common/select.h", "src/common/node_conf.h",
                "src/slurmctld/slurmctld.h"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("\n")
    (root / "slurm/slurm_version.h").write_text(f"#define SLURM_VERSION_NUMBER {version_number:#x}\n")
    if configured:
        (root / "config.h").write_text("\n")
    return root


def installed_version() -> str:
    out = subprocess.run(["slurmctld", "-V"], capture_output=True, text=True).stdout
    return out.split()[1]


def test_missing_dependencies_are_named_with_their_package(tmp_path):
    res = run_configure(tmp_path, env_extra={"PKG_CONFIG_LIBDIR": str(tmp_path / "none"),
                                             "PKG_CONFIG_PATH": ""})
    assert res.returncode != 0
    for pkg in ("libcurl4-openssl-dev", "libhwloc-dev", "libyaml-cpp-dev", "rapidjson-dev", "catch2"):
        assert f"apt-get install {pkg}" in res.stderr, res.stderr
    assert "build-aux/install-deps.sh" in res.stderr


def test_missing_slurm_headers_named(tmp_path):
    res = run_configure(tmp_path, "SLURM_INCLUDEDIR=" + str(tmp_path / "nowhere"))
    assert res.returncode != 0
    assert "apt-get install libslurm-dev" in res.stderr, res.stderr


def test_mismatched_slurm_source_is_refused(tmp_path):
    major, minor, micro = (int(x) for x in installed_version().split("."))
    other = (major << 16) | (minor << 8) | (micro + 1)
    tree = fake_slurm_tree(tmp_path / "slurm", other)
    build = tmp_path / "build"
    build.mkdir()
    res = run_configure(build, f"--with-slurm-source={tree}")
    assert res.returncode != 0
    assert "Slurm version mismatch" in res.stderr, res.stderr
    assert f"{major:02d}.{minor:02d}.{micro + 1}" in res.stderr
    assert f"installed slurmctld is {installed_version()}" in res.stderr
    assert "--with-slurm-source" in res.stderr


def test_unconfigured_slurm_source_is_refused(tmp_path):
    major, minor, micro = (int(x) for x in installed_version().split("."))
    tree = fake_slurm_tree(tmp_path / "slurm", (major << 16) | (minor << 8) | micro, configured=False)
    build = tmp_path / "build"
    build.mkdir()
    res = run_configure(build, f"--with-slurm-source={tree}")
    assert res.returncode != 0
    assert "config.h not found" in res.stderr and "./configure" in res.stderr, res.stderr


def test_matching_fake_source_passes_the_version_check(tmp_path):
    """The same tree with the right version gets past the check (proves the
    refusal above is about the version, not about the fake tree)."""
    major, minor, micro = (int(x) for x in installed_version().split("."))
    tree = fake_slurm_tree(tmp_path / "slurm", (major << 16) | (minor << 8) | micro)
    build = tmp_path / "build"
    build.mkdir()
    res = run_configure(build, f"--with-slurm-source={tree}", "--with-plugindir=/tmp/x")
    assert "version mismatch" not in res.stderr
    assert res.returncode == 0, res.stderr


def test_a_list_naming_an_unknown_release_is_refused(tmp_path):
    res = run_configure(tmp_path, "--with-slurm=22.05.8,23.02.1")
    assert res.returncode != 0
    assert "unknown release 23.02.1" in res.stderr and "26.05.3" in res.stderr, res.stderr


def test_a_list_naming_a_release_twice_is_refused(tmp_path):
    res = run_configure(tmp_path, "--with-slurm=26.05.3,22.05.8,26.05.3")
    assert res.returncode != 0
    assert "26.05.3 is named twice" in res.stderr, res.stderr


def test_a_list_with_one_plugindir_or_source_tree_is_refused(tmp_path):
    res = run_configure(tmp_path, "--with-slurm=22.05.8,26.05.3", "--with-plugindir=/tmp/x")
    assert res.returncode != 0
    assert "--with-plugindir names one directory" in res.stderr, res.stderr
    res = run_configure(tmp_path, "--with-slurm=22.05.8,26.05.3", f"--with-slurm-source={tmp_path}")
    assert res.returncode != 0
    assert "--with-slurm-source names the tree of one release" in res.stderr, res.stderr


def _main_build_libs() -> str:
    """The Slurm-free libraries of the build the tests run ($K8S_CONS_TRES_BUILDDIR),
    in link order: linking them keeps this test to the plugins' own sources."""
    build = Path(os.environ.get("K8S_CONS_TRES_BUILDDIR") or TOP / "build")
    libs = [build / "libk8s_cons_tres_sync.la", build / "libk8s_cons_tres_client.la", build / "libk8s_cons_tres_core.la"]
    if not all(p.is_file() for p in libs):
        pytest.skip(f"no built core and client libraries in {build}")
    return " ".join(map(str, libs))


@pytest.mark.slow  # builds two plugins: a minute or more (run-tests --quick leaves it out)
def test_a_list_of_releases_builds_and_checks_one_plugin_per_release(tmp_path):
    """--with-slurm=22.05.8,26.05.3: this build is for 22.05.8, slurm-26.05.3/
    for 26.05.3; make builds both plugins, make check checks each against its
    own release's loader (36 and 13 select_p_*), make install puts each into
    its own release's PluginDir."""
    release = slurm_release.get("26.05.3")
    if not release.built():
        release_unavailable(release.version, release.not_built_reason())
    libs = _main_build_libs()
    build = tmp_path / "build"
    build.mkdir()
    res = run_configure(build, "--with-slurm=22.05.8,26.05.3")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    assert "configuring the plugin for Slurm 26.05.3 in slurm-26.05.3/" in res.stdout
    assert "ABI family of Slurm 22.05.8... 22_05" in res.stdout, res.stdout
    assert "ABI family of Slurm 26.05.3... 25_05" in res.stdout, res.stdout
    sub = build / "slurm-26.05.3"
    assert "26.05.3" in (sub / "config.status").read_text()

    def make(*targets, **env):
        return subprocess.run(["make", "-j2", *targets, f"K8S_CONS_TRES_LIBS={libs}"], cwd=build,
                              env={**os.environ, **env}, capture_output=True, text=True, timeout=600)

    res = make("select_k8s_cons_tres.la", "release-plugins")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    plugins = [build / ".libs/select_k8s_cons_tres.so", sub / ".libs/select_k8s_cons_tres.so"]
    assert all(p.is_file() for p in plugins)
    assert plugins[0].read_bytes() != plugins[1].read_bytes()

    res = make("check-exports", "check-release-plugins")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    # one select plugin and its launch gate's PrEp plugin per release
    assert res.stdout.count("PASS: .libs/select_k8s_cons_tres.so") == 2, res.stdout
    assert res.stdout.count("PASS: .libs/prep_k8s_cons_tres.so") == 2, res.stdout
    assert "(36 select_p_*, as its release's loader requires)" in res.stdout, res.stdout
    assert "(13 select_p_*, as its release's loader requires)" in res.stdout, res.stdout

    stage = tmp_path / "stage"
    res = make("install-release-plugins", DESTDIR=str(stage))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    plugindir = subprocess.run(["make", "-s", "print-plugindir"], cwd=sub, capture_output=True,
                               text=True).stdout.strip()
    assert plugindir == str(release.prefix / "lib" / "slurm")
    installed = sorted(p.name for p in (stage / plugindir.lstrip("/")).iterdir())
    assert installed == ["prep_k8s_cons_tres.so", "select_k8s_cons_tres.so"]


def test_an_unknown_slurm_release_is_refused(tmp_path):
    res = run_configure(tmp_path, "--with-slurm=23.02.1")
    assert res.returncode != 0
    assert "unknown release" in res.stderr and "26.05.3" in res.stderr, res.stderr


def test_24_11_5_gets_the_23_11_family_adapter(tmp_path):
    """--with-slurm=24.11.5 (the cached private build) is configured with
    the 23.11-24.11 ABI family's adapter."""
    release = slurm_release.get("24.11.5")
    if not release.built():
        release_unavailable(release.version, release.not_built_reason())
    res = run_configure(tmp_path, "--with-slurm=24.11.5")
    assert res.returncode == 0, res.stderr
    assert "ABI family of Slurm 24.11.5... 23_11 (plugin/select_23_11.c)" in res.stdout, res.stdout
    assert "no adapter" not in res.stdout + res.stderr
