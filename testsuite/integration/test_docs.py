# SPDX-License-Identifier: GPL-2.0-or-later
"""The docs say what the code and the tree hold.

The man pages are the one configuration reference: they render without
warnings, k8s_cons_tres.conf(5) has an entry for exactly the keys the parser
accepts (read from its key table in core/plugin_config.cc) with each default
(core/plugin_config.h), k8s-cons-tres-inspect(1) every option of the command,
and `make install` installs every page. No Markdown file copies the key table.

README stays at most 250 lines, its quick start is two commands that exist,
and its admin section starts with the package and the manifests. In README,
doc/*.md and the other READMEs every relative link leads to a file (and a
heading) that exists, every doc/*.md is linked from README and shipped (make
dist, the package) with NEWS, and the commands, files, test files, benchmarks
and K8S_* variables the Markdown names exist."""
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
    """Canonical spellings from the parser's table in keys():
    {"lowercase", {"Canonical", setter}}. Every entry of the table must
    match, so a key written another way fails here instead of being missed."""
    src = (TOP / "core" / "plugin_config.cc").read_text()
    m = re.search(r"\btable = \{\n(.*?)\n    \};", src, re.S)
    assert m, "no key table in core/plugin_config.cc"
    table = m.group(1)
    entries = re.findall(r'^        \{"', table, re.M)
    keys = re.findall(r'^        \{"([a-z0-9]+)", \{"([A-Za-z0-9]+)",', table, re.M)
    assert len(keys) == len(entries), (len(entries), keys)
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


def man_page_entries(page):
    """The Key= of each .TP entry in a page's roff source."""
    return re.findall(r'^\.TP\n\.(?:B|BI|BR|IB)\s+"?([A-Za-z0-9]+)=', page.read_text(), re.M)


def test_the_conf_man_page_has_an_entry_for_exactly_the_parser_keys():
    """Read from the roff source, so it runs without man-db: a key the parser
    accepts and the page lacks, or an entry for a key the parser refuses,
    fails. The rendered page is checked for defaults below."""
    entries = man_page_entries(CONF_PAGE)
    keys = parser_keys()
    assert sorted(set(entries)) == sorted(entries), f"entries given twice: {entries}"
    missing = sorted(set(keys) - set(entries))
    stale = sorted(set(entries) - set(keys))
    assert not missing, f"keys the parser accepts without an entry in {CONF_PAGE.name}: {missing}"
    assert not stale, f"entries in {CONF_PAGE.name} for keys the parser refuses: {stale}"


def test_the_example_names_every_parser_key():
    """k8s_cons_tres.conf(5) calls etc/k8s_cons_tres.conf.example "a
    commented example with every key": set or commented out, each is there."""
    text = (TOP / "etc" / "k8s_cons_tres.conf.example").read_text()
    named = set(re.findall(r"^#?([A-Za-z0-9]+)=", text, re.M))
    missing = [k for k in parser_keys() if k not in named]
    assert not missing, f"keys missing from etc/k8s_cons_tres.conf.example: {missing}"


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


# ---- Markdown: README and the pages it points to ---------------------------
README = TOP / "README.md"
DOC_PAGES = sorted(DOC.glob("*.md"))
MARKDOWN = [README, *DOC_PAGES, TOP / "k8s_client" / "README.md", TOP / "k8s_sync" / "README.md",
            TOP / "testsuite" / "apiserver" / "README.md"]
TOP_DIRS = ("plugin", "core", "k8s_client", "k8s_sync", "tools", "etc", "doc", "testsuite", "build-aux", ".ci")
# paths the docs name in Slurm's own source tree, not in this one
SLURM_TREE_PATHS = {"testsuite/expect"}


def without_code_blocks(text):
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def code_blocks(text, lang="sh"):
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*]|\[([^]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(page):
    seen, out = {}, set()
    for h in re.findall(r"^#{1,6} +(.*?) *$", without_code_blocks(page.read_text()), re.M):
        base = slug(h)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def test_readme_is_at_most_250_lines():
    n = len(README.read_text().splitlines())
    assert n <= 250, f"README.md has {n} lines; move detail to doc/ (testing.md, architecture.md, ...)"


@pytest.mark.parametrize("page", MARKDOWN, ids=[str(p.relative_to(TOP)) for p in MARKDOWN])
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page):
    bad = []
    for target in re.findall(r"\[[^]]*\]\(([^)\s]+)\)", without_code_blocks(page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target}: no {dest.relative_to(TOP) if TOP in dest.parents else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading #{anchor} in {dest.relative_to(TOP)}")
    assert not bad, bad


def test_readme_links_every_doc_page_and_names_only_pages_that_exist():
    text = README.read_text()
    linked = {(TOP / t.partition("#")[0]).resolve()
              for t in re.findall(r"\]\((doc/[^)#\s]+)", text)}
    assert not set(DOC_PAGES) - linked, f"doc pages README does not link: {set(DOC_PAGES) - linked}"
    named = set(re.findall(r"\bdoc/[\w.-]+\.(?:md|[158])\b", text))
    assert all((TOP / n).exists() for n in named), named
    assert "doc/k8s_cons_tres.conf.5" in named, "README must point to the configuration reference"


def test_no_markdown_copies_the_configuration_key_table():
    """k8s_cons_tres.conf(5) is the one reference: a Markdown table whose rows
    start with the parser's keys is a second copy that will drift."""
    keys = set(parser_keys())
    for page in MARKDOWN:
        rows = [line for line in page.read_text().splitlines() if line.startswith("| `")]
        firsts = [re.match(r"\| `(\w+)", r).group(1) for r in rows if re.match(r"\| `(\w+)", r)]
        copied = [k for k in firsts if k in keys]
        assert len(copied) < 3, f"{page.relative_to(TOP)} has a key table ({copied}); link the man page instead"


def test_the_markdown_pages_and_news_are_distributed():
    """`make dist` carries README's pages and NEWS, as the package does."""
    am = (TOP / "Makefile.am").read_text().replace("\\\n", " ")
    dist = set()
    for m in re.finditer(r"^EXTRA_DIST\s*\+?=\s*(.*)$", am, re.M):
        dist |= set(m.group(1).split())
    want = {"README.md", "NEWS"} | {f"doc/{p.name}" for p in DOC_PAGES}
    assert not want - dist, f"not in EXTRA_DIST: {sorted(want - dist)}"
    deb = (TOP / "build-aux" / "make-deb.sh").read_text()
    assert '"$srcdir"/doc/*.md' in deb and '"$srcdir/NEWS"' in deb


def test_quick_start_is_two_commands_that_exist():
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = code_blocks(section)[0]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]
    assert commands == ["testsuite/demo", "testsuite/run-tests"], commands
    for c in commands:
        assert os.access(TOP / c, os.X_OK), c


def commands_in_docs():
    """(page, line) of each shell command in README's and doc/*.md's sh blocks."""
    for page in [README, *DOC_PAGES]:
        for block in code_blocks(page.read_text()):
            for line in block.splitlines():
                line = line.split(" #")[0].strip()
                if line and not line.startswith("#"):
                    yield page, line


def test_the_commands_the_docs_give_exist():
    """The first word of each command in an sh block, past VAR=value and
    `time`, is an executable of the tree when it names one of its folders."""
    bad = []
    for page, line in commands_in_docs():
        words = [w for w in line.split() if not re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", w)]
        words = words[1:] if words[:1] == ["time"] else words
        if words and words[0].split("/")[0] in TOP_DIRS and not os.access(TOP / words[0], os.X_OK):
            bad.append(f"{page.name}: {line}")
    assert not bad, bad


def test_the_benchmarks_the_docs_name_exist():
    src = (TOP / "testsuite" / "bench" / "run").read_text()
    known = set(re.findall(r'^    "([a-z-]+)":', src.split("BENCHES = {", 1)[1].split("}", 1)[0], re.M))
    assert {"placement", "feed", "slurmctld-scale"} <= known, known
    named = set()
    for page in [README, *DOC_PAGES]:
        text = page.read_text()
        # testsuite/bench/run [--option [value]]... name
        named |= {m.group(1) for m in re.finditer(
            r"testsuite/bench/run(?: --?[a-z-]+(?: (?!-)[^ `\n]+)?)* ([a-z][a-z-]+)\b", text)}
    assert named, "the docs name no benchmark"
    assert named <= known, f"benchmarks the docs name that testsuite/bench/run does not know: {named - known}"


def test_the_files_and_test_files_the_docs_name_exist():
    """Paths in inline code under the tree's own folders, and test_*.py
    names, must exist (a folder, a file, or a file with an extension)."""
    bad = []
    integration = TOP / "testsuite" / "integration"
    for page in [README, *DOC_PAGES]:
        for span in re.findall(r"`([^`\n]+)`", without_code_blocks(page.read_text())):
            for path in re.findall(r"(?<![\w./~-])((?:%s)/[\w./-]*\w/?)" % "|".join(map(re.escape, TOP_DIRS)), span):
                if re.search(r"[A-Z]{4,}|<|\*|\{", path) or path in SLURM_TREE_PATHS:
                    continue  # a placeholder (VERSION, NAME), a pattern, or Slurm's
                full = TOP / path
                if not (full.exists() or any(full.parent.glob(full.name + ".*"))):
                    bad.append(f"{page.name}: {path}")
            for test in re.findall(r"\b(test_\w+\.py)\b", span):
                if not (integration / test).exists():
                    bad.append(f"{page.name}: {test}")
    assert not bad, bad


def test_the_variables_the_docs_name_are_read_somewhere():
    """Every K8S_* the docs tell people to set is read by the tree's code."""
    this = Path(__file__).resolve()
    sources = [p for d in ("testsuite", "build-aux", ".ci", "core", "k8s_client", "k8s_sync", "plugin", "tools")
               for p in (TOP / d).rglob("*")
               if p.is_file() and p.suffix not in (".md", ".json", ".pyc") and p != this]
    code = "\n".join(p.read_text(errors="replace") for p in sources if p.stat().st_size < 2_000_000)
    bad = set()
    for page in [README, *DOC_PAGES]:
        for var in set(re.findall(r"\bK8S_[A-Z0-9_]*[A-Z0-9]", page.read_text())):
            # K8S_CONS_TRES_PLUGIN_26_05_3 is built from a prefix and the release
            stem = re.sub(r"(_\d+)+$", "_", var)
            if var not in code and stem not in code:
                bad.add(var)
    assert not bad, f"K8S_* variables the docs name that no code reads: {sorted(bad)}"
