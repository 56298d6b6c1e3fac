# SPDX-License-Identifier: GPL-2.0-or-later
"""`make deb` builds the Debian package for the configured Slurm release;
`apt-get install ./FILE.deb` installs it on this machine; a cluster runs a
job (with its ResourceClaim) through the installed plugin, not the build
tree's; `apt-get remove` takes every file away again. A package pinned to
another Slurm version is refused.

The machine is left as found: the test is skipped when a package of the
plugin is installed already, and a plugin or inspect command that
`make install` put there (owned by no package) is put back afterwards.
Other clusters never load the installed plugin: the harness copies the one
it runs into its own run directory, first in PluginDir."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import harness.cluster as cluster_mod
from harness.cluster import Cluster, new_run_dir
from harness.jobs import sbatch, wait_job
from harness.kube import job_claims
from harness.wait import wait_for

TOP = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("K8S_CONS_TRES_BUILDDIR") or TOP / "build")
FIXTURES = TOP / "testsuite" / "fixtures"
APT_ENV = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
APT = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300"]


def run(*cmd, check=True, timeout=600, **kw):
    res = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout,
                         env=APT_ENV, **kw)
    if check:
        assert res.returncode == 0, f"{' '.join(cmd)}: {res.stdout}\n{res.stderr}"
    return res


def make_var(target):
    return run("make", "-s", "--no-print-directory", "-C", str(BUILD), target).stdout.strip()


def installed_packages():
    """Installed packages that provide the plugin (any Slurm release)."""
    res = run("dpkg-query", "-W", "-f", "${Package} ${Status}\n", "slurm-k8s-cons-tres-*",
              check=False)
    return [line.split()[0] for line in res.stdout.splitlines() if "install ok installed" in line]


def owner(path):
    res = run("dpkg", "-S", str(path), check=False)
    return res.stdout.split(":")[0] if res.returncode == 0 else None


pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="installs a package: needs root"),
    pytest.mark.skipif(not shutil.which("apt-get") or not shutil.which("dpkg-deb"),
                       reason="needs apt-get and dpkg-dev"),
]


@pytest.fixture(scope="module")
def deb(tmp_path_factory):
    assert (BUILD / "Makefile").exists(), f"configure first: no {BUILD}/Makefile (build-aux/build.sh)"
    res = run("make", "-C", str(BUILD), "deb", timeout=1800)
    path = BUILD / make_var("print-deb-name")
    assert path.is_file() and str(path) in res.stdout, res.stdout
    return path


def field(deb, name):
    return run("dpkg-deb", "-f", str(deb), name).stdout.strip()


def test_package_names_the_slurm_release_and_pins_it(deb):
    slurm_deb = run("dpkg-query", "-W", "-f", "${Version}", "slurmctld").stdout
    release = slurm_deb.split("-")[0]
    assert deb.name.startswith(f"slurm-k8s-cons-tres-{release}_")
    assert field(deb, "Package") == f"slurm-k8s-cons-tres-{release}"
    depends = field(deb, "Depends")
    assert f"slurmctld (= {slurm_deb})" in depends
    assert f"slurm-wlm-basic-plugins (= {slurm_deb})" in depends
    for lib in ("libcurl4", "libyaml-cpp0.7"):
        assert lib in depends, depends
    # hwloc is test code's only (testsuite/support): nothing shipped links it
    assert "hwloc" not in depends, depends
    files = run("dpkg-deb", "-c", str(deb)).stdout
    plugindir = make_var("print-plugindir")
    doc = f"./usr/share/doc/slurm-k8s-cons-tres-{release}/"
    for path in (f".{plugindir}/select_k8s_cons_tres.so", f".{plugindir}/prep_k8s_cons_tres.so",
                 "./usr/bin/k8s-cons-tres-inspect",
                 "./usr/share/man/man5/k8s_cons_tres.conf.5.gz",
                 "./usr/share/man/man8/select_k8s_cons_tres.8.gz",
                 "./usr/share/man/man1/k8s-cons-tres-inspect.1.gz",
                 doc + "examples/k8s_cons_tres.conf.example",
                 doc + "examples/kubernetes/kustomization.yaml", doc + "copyright"):
        assert path in files, (path, files)
    assert ".la" not in files and ".a\n" not in files


def test_a_package_for_another_slurm_version_is_refused(deb, tmp_path):
    """Repacked with the Slurm pin one Debian revision off: apt refuses it."""
    tree = tmp_path / "tree"
    run("dpkg-deb", "-R", str(deb), str(tree))
    control = tree / "DEBIAN" / "control"
    slurm_deb = run("dpkg-query", "-W", "-f", "${Version}", "slurmctld").stdout
    control.write_text(control.read_text().replace(f"(= {slurm_deb})", f"(= {slurm_deb}.1)"))
    bad = tmp_path / "mismatch.deb"
    run("dpkg-deb", "--root-owner-group", "--build", str(tree), str(bad))
    res = run(*APT, "install", "--simulate", str(bad), check=False)
    assert res.returncode != 0, res.stdout
    assert "slurm-wlm-basic-plugins" in res.stdout + res.stderr


def test_install_run_a_job_and_remove(deb, monkeypatch, tmp_path):
    if installed_packages():
        pytest.skip(f"{installed_packages()} installed on this machine: not touching it")
    pkg = field(deb, "Package")
    plugin = Path(make_var("print-plugindir")) / "select_k8s_cons_tres.so"
    inspect = Path("/usr/bin/k8s-cons-tres-inspect")
    # what `make install` may have put there, owned by no package: put back after
    saved = {}
    for path in (plugin, inspect):
        if path.exists() and owner(path) is None:
            saved[path] = tmp_path / path.name
            shutil.copy2(path, saved[path])
    cluster = None
    try:
        run(*APT, "install", "--no-install-recommends", str(deb))
        assert pkg in installed_packages()
        assert owner(plugin) == pkg and plugin.is_file()
        assert run("man", "-w", "5", "k8s_cons_tres.conf").stdout.strip().startswith("/usr/share/man/")
        assert run("man", "-w", "8", "select_k8s_cons_tres").stdout.strip()
        res = run(str(inspect), check=False)
        assert res.returncode == 2 and "usage: k8s-cons-tres-inspect" in res.stderr
        if shutil.which("kubectl"):   # the installed kustomize base builds
            out = run("kubectl", "kustomize", f"/usr/share/doc/{pkg}/examples/kubernetes").stdout
            assert "kind: PriorityClass" in out and "name: slurm-k8s-cons-tres-read" in out

        # The harness against the installed plugin (K8S_CONS_TRES_PLUGIN), not
        # the build tree's; only the fixture generator (a test tool) is built.
        monkeypatch.setenv("K8S_CONS_TRES_PLUGIN", str(plugin))
        gen = BUILD / cluster_mod.GENERATOR
        monkeypatch.setattr(cluster_mod, "find_built",
                            lambda rel, what: BUILD / rel if (BUILD / rel).is_file()
                            else pytest.fail(f"{what} not built in {BUILD}"))
        assert gen.is_file(), f"the fixture generator is not built in {BUILD}"
        cluster = Cluster(new_run_dir("k8s-cons-tres-pkg-"))
        cluster.up(str(FIXTURES / "demo.json"))
        assert cluster.state()["plugin"] == str(plugin)
        copied = cluster.run_dir / "plugins" / plugin.name
        assert copied.read_bytes() == plugin.read_bytes()
        log = (cluster.run_dir / "log" / "slurmctld.log").read_text()
        assert "select/k8s_cons_tres: starting in slurmctld" in log

        job = sbatch(cluster, "-c4", "--gres=gpu:1", "-o", "/dev/null", "--wrap", "sleep 60")
        wait_job(cluster, job, states={"RUNNING"})
        claims = wait_for(lambda: job_claims(cluster, job), timeout=30,
                          what=f"the claim of job {job}")
        assert claims[0]["status"]["allocation"]["devices"]["results"]
        cluster.run("scancel", str(job))
        wait_job(cluster, job)
        wait_for(lambda: not job_claims(cluster, job), timeout=30,
                 what=f"the claim of job {job} to go")
        cluster.down()
        cluster = None

        run(*APT, "remove", pkg)
        assert pkg not in installed_packages()
        assert not plugin.exists() and not inspect.exists()
        assert not Path(f"/usr/share/doc/{pkg}").exists()
        assert not list(Path("/usr/share/man").glob("man?/k8s_cons_tres.conf.5*"))
    finally:
        if cluster is not None:
            cluster.down()
        if pkg in installed_packages():
            run(*APT, "remove", pkg, check=False)
        for path, copy in saved.items():
            if not path.exists():
                shutil.copy2(copy, path)
