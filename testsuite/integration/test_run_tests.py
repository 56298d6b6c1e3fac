# SPDX-License-Identifier: GPL-2.0-or-later
"""testsuite/run-tests' tiers and a clone without the vendored Slurm sources,
without building or starting anything:

  - the markers conftest.py derives (a cluster test is marked, one that
    starts nothing is not, and what a selection needs: the ASan plugin, the
    private releases), which --quick (-m "not cluster") and FILE... use;
  - K8S_NO_CLUSTERS=1 (--quick) stops a test that would start Slurm anyway;
  - build-aux/slurm-release.sh without the vendor directory exits 3 with a
    message saying how to provide the sources, and still fails (1) when the
    directory is there but wrong; release-plugin.sh passes the 3 on; the
    harness's skip reason says the same; K8S_REQUIRE_SLURM_RELEASES turns
    such a skip into a failure for the releases it names."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import slurm_release
from conftest import TESTSUITE, release_unavailable

TOP = TESTSUITE.parent
SLURM_RELEASE = TOP / "build-aux" / "slurm-release.sh"
VENDORED = slurm_release.PRIVATE[1:]  # 25.11.7, 26.05.3: from shared/vendor
FROM_DEBIAN = slurm_release.PRIVATE[0]  # 24.11.5: Debian's pool


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("K8S_SLURM_RELEASE", "K8S_REQUIRE_SLURM_RELEASES", "K8S_NO_CLUSTERS",
                        "K8S_TEST_NEEDS") and not k.startswith("PYTEST_")}
    env.update(extra)
    return env


def collect(tmp_path, *args):
    """pytest --collect-only of the integration tests: (selected node ids,
    what they need as conftest writes it for run-tests)."""
    needs = tmp_path / "needs"
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--collect-only",
                          *args], cwd=TOP, env=_env(K8S_TEST_NEEDS=str(needs)), capture_output=True,
                         text=True, timeout=120)
    assert res.returncode in (0, 5), res.stdout[-3000:] + res.stderr[-3000:]  # 5: none selected
    ids = [line for line in res.stdout.splitlines() if "::" in line]
    return ids, needs.read_text().split() if needs.exists() else []


def test_quick_selects_no_cluster_test_and_every_other(tmp_path):
    d = "testsuite/integration/"
    ids, _ = collect(tmp_path, "-m", "not cluster", d + "test_cluster_basics.py", d + "test_demo.py",
                     d + "test_plugin_config.py", d + "test_apiserver_api.py", d + "test_releases_plugin.py")
    files = {i.split("::")[0].rsplit("/", 1)[-1] for i in ids}
    # started through the conftest fixtures, a module fixture's Cluster,
    # Cluster.prepare alone, and the demo program
    assert not files & {"test_cluster_basics.py", "test_demo.py", "test_plugin_config.py"}, ids
    everything, _ = collect(tmp_path, d + "test_apiserver_api.py")
    assert [i for i in ids if "test_apiserver_api.py" in i] == everything
    # in a file of cluster tests, the one that starts nothing stays in
    exports = [i for i in ids if "test_releases_plugin.py" in i]
    assert exports and all("test_plugin_exports_what_the_release_loader_looks_up" in i for i in exports), ids


def test_what_a_selection_needs_built(tmp_path):
    d = "testsuite/integration/"
    assert collect(tmp_path, d + "test_asan_plugin.py")[1] == ["asan_plugin"]
    assert collect(tmp_path, d + "test_external_nodes.py")[1] == [f"slurm-{v}" for v in VENDORED]
    assert collect(tmp_path, d + "test_docs.py", d + "test_cluster_basics.py")[1] == []
    # a -k that leaves out the releases' tests needs none of them
    assert collect(tmp_path, d + "test_configure.py", "-k", "unknown")[1] == []


def test_no_clusters_stops_a_test_that_would_start_slurm(tmp_path):
    """What --quick sets: Cluster.prepare and the spawning of a Slurm daemon
    refuse (run in a child, so that this test starts nothing either way)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from harness import cluster; "
            "c = getattr(cluster, 'Clu' + 'ster')(sys.argv[2]); "
            "c.prepare(sys.argv[3]) if sys.argv[4] == 'prepare' else c._spawn('slurmctld', ['true'])")
    for how in ("prepare", "spawn"):
        res = subprocess.run([sys.executable, "-c", code, str(TESTSUITE), str(tmp_path / how),
                              str(TESTSUITE / "fixtures" / "demo.json"), how],
                             env=_env(K8S_NO_CLUSTERS="1"), capture_output=True, text=True, timeout=60)
        assert res.returncode != 0 and "is not marked `cluster`" in res.stderr, (how, res.stderr)
        assert not (tmp_path / how / "etc" / "slurm.conf").exists()


def release_script(*args, vendor, cache, script=SLURM_RELEASE):
    return subprocess.run([str(script), *args], env=_env(K8S_CONS_TRES_VENDOR=str(vendor),
                                                         K8S_CONS_TRES_CACHE=str(cache)),
                          capture_output=True, text=True, timeout=60)


def test_a_clone_without_the_vendored_sources_is_told_how_to_provide_them(tmp_path, monkeypatch):
    # one test over both releases: a parameter naming a release would mark
    # the test as needing that release built (conftest.py)
    cache = tmp_path / "cache"
    for version in VENDORED:
        for args in (["--check", version], [version]):
            res = release_script(*args, vendor=tmp_path / "no-vendor", cache=cache)
            assert res.returncode == 3, res.stderr
            assert f"Slurm {version} is not available" in res.stderr, res.stderr
            assert "K8S_CONS_TRES_VENDOR=DIR" in res.stderr and "SHA256SUMS" in res.stderr, res.stderr
            assert f"slurm-{version}.tar.gz" in res.stderr, res.stderr
        assert not cache.exists(), "nothing is made for a release that cannot be had"
        res = release_script(version, vendor=tmp_path / "no-vendor", cache=cache,
                             script=TOP / "build-aux" / "release-plugin.sh")
        assert res.returncode == 3, res.stderr
        # the harness's reason for skipping its tests says the same
        monkeypatch.setenv("K8S_CONS_TRES_VENDOR", str(tmp_path / "no-vendor"))
        monkeypatch.setenv("K8S_CONS_TRES_CACHE", str(cache))
        reason = slurm_release.Release(version).not_built_reason()
        assert "its sources are not here" in reason and "K8S_CONS_TRES_VENDOR=DIR" in reason, reason


def test_a_vendor_directory_that_is_there_but_wrong_still_fails(tmp_path):
    version = VENDORED[-1]
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    (vendor / "README.md").write_text("no checksums\n")
    res = release_script("--check", version, vendor=vendor, cache=tmp_path / "cache")
    assert res.returncode == 1 and "lacks its checksums" in res.stderr, res.stderr
    (vendor / "SHA256SUMS").write_text("0" * 64 + "  slurm-1.2.3.tar.gz\n")
    res = release_script(version, vendor=vendor, cache=tmp_path / "cache")
    assert res.returncode == 1 and f"slurm-{version}.tar.gz is not listed" in res.stderr, res.stderr
    (vendor / "SHA256SUMS").write_text("0" * 64 + f"  slurm-{version}.tar.gz\n")
    res = release_script(version, vendor=vendor, cache=tmp_path / "cache")
    assert res.returncode == 1 and "not found" in res.stderr, res.stderr


def test_releases_from_debian_and_the_installed_one_need_no_vendor(tmp_path):
    res = release_script("--check", FROM_DEBIAN, vendor=tmp_path / "no-vendor", cache=tmp_path / "cache")
    assert res.returncode == 0, res.stderr
    res = release_script("--check", slurm_release.INSTALLED, vendor=tmp_path / "no-vendor",
                         cache=tmp_path / "cache")
    assert res.returncode == 1 and "installed Debian Slurm" in res.stderr, res.stderr


def test_required_releases_fail_the_others_skip(monkeypatch):
    a, b = VENDORED
    for want, required in (("", ()), ("1", (a, b)), (f"22.05.8 {a}", (a,)), (f"{b},{a}", (a, b))):
        monkeypatch.setenv("K8S_REQUIRE_SLURM_RELEASES", want)
        for v in (a, b):
            expected = pytest.fail.Exception if v in required else pytest.skip.Exception
            with pytest.raises(expected, match="the reason"):
                release_unavailable(v, "the reason")


def run_tests_without_vendor(tmp_path, *args, **env):
    """testsuite/run-tests as on a clone without the vendored sources and
    with nothing cached: no vendor directory, an empty cache."""
    return subprocess.run([str(TESTSUITE / "run-tests"), *args], cwd=TOP, capture_output=True, text=True,
                          timeout=900, env=_env(K8S_CONS_TRES_VENDOR=str(tmp_path / "no-vendor"),
                                                K8S_CONS_TRES_CACHE=str(tmp_path / "cache"),
                                                K8S_SKIP_SANITIZERS="1", K8S_CCACHE="0",
                                                K8S_TEST_JOBS="1", **env))


def test_run_tests_skips_what_needs_a_missing_release_says_so_and_passes(tmp_path):
    version = VENDORED[0]
    test = f"testsuite/integration/test_releases_plugin.py::test_plugin_exports_what_the_release_loader_looks_up[{version}]"
    res = run_tests_without_vendor(tmp_path, test)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-5000:]
    assert "1 skipped" in out and f"Slurm {version} is not built, and its sources are not here" in out, out[-5000:]
    tail = out[out.index("== run-tests: Slurm"):]
    assert f"Slurm {version} skipped" in tail and "K8S_CONS_TRES_VENDOR=DIR testsuite/run-tests" in tail, tail
    assert f"slurm-{version}.tar.gz" in tail and "SHA256SUMS" in tail, tail
    # where every release is required (CI), the same run fails
    res = run_tests_without_vendor(tmp_path, test, K8S_REQUIRE_SLURM_RELEASES="1")
    out = res.stdout + res.stderr
    assert res.returncode != 0 and f"Slurm {version} is not available" in out, out[-5000:]
