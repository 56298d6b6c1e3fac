# SPDX-License-Identifier: GPL-2.0-or-later
"""The man pages render without warnings, and document what the code knows:
every key of the k8s_cons_tres.conf parser (read from its key table in
core/plugin_config.cc) with its default (core/plugin_config.h) in
k8s_cons_tres.conf(5), every option of
k8s-cons-tres-inspect in its (1) page; `make install` installs every page."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
DOC = TOP / "doc"
PAGES = sorted(p for p in DOC.glob("*.[1-8]"))
CONF_PAGE = DOC / "k8s_cons_tres.conf.5"
INSPECT_PAGE = DOC / "k8s-cons-tres-inspect.1"


def parser_keys():
    """Canonical spellings from the parser's table:
    {"lowercase", {"Canonical", setter}}."""
    src = (TOP / "core" / "plugin_config.cc").read_text()
    keys = re.findall(r'\{"([a-z0-9]+)", \{"([A-Za-z0-9]+)",', src)
    assert len(keys) >= 19, keys
    for low, canon in keys:
        assert canon.lower() == low
    return [canon for _, canon in keys]


def defaults():
    """Key -> default, from the struct's initializers with a // Key= comment;
    a number with `// Key=a|b|c` is an index into those names."""
    out = {}
    for line in (TOP / "core" / "plugin_config.h").read_text().splitlines():
        m = re.search(r'=\s*"([^"]+)";\s*//\s*(\w+)=', line) or \
            re.search(r'\{"([^"]+)"\};\s*//\s*(\w+)=', line) or \
            re.search(r'\{(\d+)\};\s*//\s*(\w+)=', line) or \
            re.search(r'=\s*(\d+);\s*//\s*(\w+)=', line)
        if not m:
            continue
        value, key = m.group(1), m.group(2)
        names = re.search(rf"//\s*{key}=([a-z]+(?:\|[a-z]+)+)", line)
        if names and value.isdigit():
            value = names.group(1).split("|")[int(value)]
        out[key] = value
    return out


def render(page, width=200):
    env = {**os.environ, "MANWIDTH": str(width), "MAN_KEEP_FORMATTING": "0",
           "LANG": "C.UTF-8"}
    res = subprocess.run(["man", "--warnings", "-l", str(page)], capture_output=True,
                         text=True, env=env, timeout=60)
    return res


def plain(page):
    res = render(page)
    assert res.returncode == 0, res.stderr
    # no overstrike or SGR formatting
    text = re.sub(r".\x08", "", res.stdout)
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@pytest.mark.skipif(not shutil.which("man") or not shutil.which("groff"),
                    reason="man-db and groff needed")
@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_renders_without_warnings(page):
    res = render(page, width=80)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    text = re.sub(r".\x08", "", res.stdout)
    assert "NAME" in text and "SEE ALSO" in text
    res = subprocess.run(["groff", "-man", "-ww", "-z", "-Tutf8", str(page)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stderr == "", res.stderr


def test_the_three_pages_exist_and_are_installed():
    assert {p.name for p in PAGES} == {"k8s_cons_tres.conf.5", "select_k8s_cons_tres.8",
                                       "k8s-cons-tres-inspect.1"}
    am = (TOP / "Makefile.am").read_text().replace("\\\n", " ")
    m = re.search(r"^dist_man_MANS\s*=\s*(.*)$", am, re.M)
    assert m, "Makefile.am installs no man pages"
    assert set(m.group(1).split()) == {f"doc/{p.name}" for p in PAGES}


@pytest.mark.skipif(not shutil.which("man"), reason="man-db needed")
def test_every_parser_key_is_in_the_man_page_with_its_default():
    text = plain(CONF_PAGE)
    keys = parser_keys()
    missing = [k for k in keys if not re.search(rf"^\s+{k}=", text, re.M)]
    assert not missing, f"keys without an entry in {CONF_PAGE.name}: {missing}"
    # each key's entry (up to the next entry) names its default
    starts = sorted((m.start(), k) for k in keys for m in [re.search(rf"^\s+{k}=", text, re.M)])
    entries = {k: text[s:(starts[i + 1][0] if i + 1 < len(starts) else len(text))]
               for i, (s, k) in enumerate(starts)}
    defs = defaults()
    assert {"ClaimNamespace", "StaleAfter", "RequestTimeout", "CPUDriver"} <= set(defs), defs
    for key, value in defs.items():
        assert re.search(rf"Default\s+{re.escape(value)}\b", entries[key]), \
            f"{key}: default {value} not stated:\n{entries[key]}"
    for key, entry in entries.items():
        assert "Default" in entry or "default" in entry or "No default" in entry, key
        assert "rror" in entry or "Error" in entry or "Values as for" in entry, \
            f"{key}: no error behaviour:\n{entry}"


@pytest.mark.skipif(not (TOP / "tools" / "k8s_cons_tres_inspect.cc").exists(),
                    reason="no inspect command in this tree")
@pytest.mark.skipif(not shutil.which("man"), reason="man-db needed")
def test_every_inspect_option_is_in_its_man_page():
    src = (TOP / "tools" / "k8s_cons_tres_inspect.cc").read_text()
    options = set(re.findall(r'f == "(--[a-z-]+)"', src))
    assert {"--kubeconfig", "--slices", "--claims", "--json", "--cpu-driver",
            "--gpu-drivers"} <= options, options
    text = plain(INSPECT_PAGE)
    missing = [o for o in sorted(options) if not re.search(rf"^\s+{o}\b", text, re.M)]
    assert not missing, f"options without an entry in {INSPECT_PAGE.name}: {missing}"


def test_readme_admin_section_starts_with_the_package_and_the_manifests():
    readme = (TOP / "README.md").read_text()
    section = readme.split("## Install\n", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert re.fullmatch(r"apt-get install \./slurm-k8s-cons-tres-[0-9.]+_[^ ]+_amd64\.deb",
                        commands[0]), commands
    assert commands[1] == "kubectl apply -k etc/kubernetes", commands
    assert section.index("```sh") < section.index("\n##")
