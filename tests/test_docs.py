"""The README and `docs/` stay inside the repository and name only what exists.

- every markdown link (and image) of README.md, docs/*.md and benchmarks/README.md is a relative path to an existing
  file or folder of the repository (anchors into a markdown page name one of its headings); no URL, nothing outside
  the checkout, and nothing under `runs/` (which a fresh clone does not have: such paths are written as inline code);
- no page refers to the notes beside a checkout (`../shared/DESIGN.md`, `../shared/papers`, `../shared/COMPAT.md`)
  or to one machine's paths (`/work/...`);
- README.md has at most 200 lines;
- every `training_configs/*.jsonnet` (or `.libsonnet`) named exists, and every `allennlp <command>` (and
  `allennlp bits <command>`) in a code block of README.md or docs/*.md is a registered command (from
  `allennlp --help` and `allennlp bits --help`, run once).
"""
import functools
import itertools
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
CHECKED = PAGES + [ROOT / "benchmarks" / "README.md"]

FENCE = re.compile(r"^```.*?^```[^\n]*$", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]+`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
AUTOLINK = re.compile(r"<(?:https?|ftp|mailto):[^>\s]+>|\bhttps?://", re.I)
CONFIG = re.compile(r"[\w{},./*-]*\.(?:jsonnet|libsonnet)\b")
COMMAND = re.compile(r"(?<![\w./-])allennlp[ \t]+([a-z][a-z-]*)(?:[ \t]+([a-z][a-z-]*))?")


def _prose(text: str) -> str:
    """The page without fenced code blocks and with inline code blanked (a path in backticks is not a link)."""
    return INLINE_CODE.sub("code", FENCE.sub("", text))


def _code_blocks(text: str) -> List[str]:
    return FENCE.findall(text)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    heading = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


@functools.lru_cache(maxsize=None)
def _anchors(page: Path) -> Set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(match.group(1)) for match in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M)}


def _expand_braces(token: str) -> List[str]:
    match = re.search(r"\{([^{}]*)\}", token)
    if match is None:
        return [token]
    return list(itertools.chain.from_iterable(
        _expand_braces(token[:match.start()] + part + token[match.end():]) for part in match.group(1).split(",")))


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", CHECKED, ids=_rel)
def test_links_stay_in_the_repository_and_resolve(page):
    problems = []
    prose = _prose(page.read_text(encoding="utf-8"))
    for url in AUTOLINK.findall(prose):
        problems.append(f"a link outside the repository: {url!r}")
    for target in LINK.findall(prose):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            problems.append(f"{target}: a link outside the repository (URL)")
            continue
        path_part, _, anchor = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page
        try:
            inside = resolved.relative_to(ROOT)
        except ValueError:
            problems.append(f"{target}: outside the repository")
            continue
        if inside.parts[:1] == ("runs",):
            problems.append(f"{target}: runs/ is not in a fresh clone; write the path as inline code")
        elif not resolved.exists():
            problems.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            problems.append(f"{target}: no heading '#{anchor}' in {inside}")
    assert not problems, f"{_rel(page)}:\n" + "\n".join(problems)


@pytest.mark.parametrize("page", CHECKED, ids=_rel)
def test_no_references_outside_the_checkout(page):
    text = page.read_text(encoding="utf-8")
    for banned in BANNED:
        assert banned not in text, f"{_rel(page)} names {banned!r}"


BANNED = ("shared/DESIGN.md", "shared/papers", "shared/COMPAT.md", "shared/studies", "/work/")


def test_the_package_cites_nothing_outside_the_checkout():
    package = ROOT / "bitcode_allennlp"
    found = [f"{path.relative_to(ROOT)} names {banned!r}" for path in sorted(package.rglob("*.py"))
             for banned in BANNED if banned in path.read_text(encoding="utf-8")]
    assert not found, found


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move details into docs/"


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_named_configs_exist(page):
    missing = []
    for token in CONFIG.findall(page.read_text(encoding="utf-8")):
        for name in _expand_braces(token.lstrip("./")):
            if "*" in name:
                continue
            path = ROOT / name if "/" in name else ROOT / "training_configs" / name
            if not path.is_file():
                missing.append(name)
    assert not missing, f"{_rel(page)} names configs that do not exist: {missing}"


def _help_commands(*args: str) -> Set[str]:
    result = subprocess.run([sys.executable, "-m", "allennlp", *args, "--help"], capture_output=True, text=True,
                            timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    # argparse lists sub-commands indented by four spaces, a long name on a line of its own
    return set(re.findall(r"^ {4}([a-z][a-z-]*)(?:\s|$)", result.stdout, re.M))


@functools.lru_cache(maxsize=None)
def _registered() -> Dict[str, Set[str]]:
    return {"allennlp": _help_commands(), "bits": _help_commands("bits")}


def test_commands_in_code_blocks_are_registered():
    registered = _registered()
    assert {"train", "predict", "evaluate", "hash-corpus", "hash-corpus-merge", "bits"} <= registered["allennlp"]
    assert {"stats", "heatmap", "diff", "index", "search", "precision", "probe"} <= registered["bits"]
    unknown = []
    for page in PAGES:
        for block in _code_blocks(page.read_text(encoding="utf-8")):
            for command, sub in COMMAND.findall(block):
                if command not in registered["allennlp"]:
                    unknown.append(f"{_rel(page)}: allennlp {command}")
                elif command == "bits" and sub and sub not in registered["bits"]:
                    unknown.append(f"{_rel(page)}: allennlp bits {sub}")
    assert not unknown, "not registered allennlp commands:\n" + "\n".join(unknown)


def test_every_committed_result_file_is_named_in_the_docs():
    """A result committed under `benchmarks/results/` is named (by file name) on a page a reader can find."""
    pages = [ROOT / "README.md", ROOT / "REPRODUCTION.md", ROOT / "benchmarks" / "README.md",
             *sorted((ROOT / "docs").glob("*.md"))]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    committed = subprocess.run(["git", "ls-files", "benchmarks/results"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout.split()
    unnamed = [path for path in committed if Path(path).name not in text and Path(path).stem not in text]
    assert committed and not unnamed, unnamed
