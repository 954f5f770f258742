"""The pages that show the demo's output agree with the one run kept in docs/demo_output/ (docs/demo_pages.py)."""
import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "docs"))
import demo_pages  # noqa: E402


def test_every_page_agrees_with_the_kept_run():
    result = subprocess.run([sys.executable, "docs/demo_pages.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 pages agree" in result.stdout


@pytest.mark.parametrize("page", demo_pages.PAGES)
def test_a_page_that_drifts_from_the_run_is_rewritten(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    blocks = demo_pages.MARK.findall(text)
    assert blocks, f"{page} shows no block of the demo run"
    run = demo_pages.Run()
    code = run.predictions[0]["codes"][0]
    assert code in "".join(demo_pages.render(p, (ROOT / p).read_text(encoding="utf-8"), run)
                           for p in demo_pages.PAGES)  # some page shows the run's codes
    body = blocks[0][2]
    drifted = text.replace(body, body.replace("the", "teh", 1) + "a line by hand\n", 1)
    assert drifted != text and demo_pages.render(page, drifted, run) == text
    flat = " ".join(text.split())
    assert "not bit-reproducible" in flat and "docs/demo_pages.py" in flat  # which run, and that it is one run


def test_the_kept_run_is_whole_and_names_no_machine_folder():
    run = demo_pages.Run()
    assert {"date", "commit", "machine", "torch", "torch_threads", "demo_seconds"} <= set(run.record)
    assert len(run.predictions) == len(demo_pages.GOLD)
    for name in demo_pages.SCREENSHOTS:  # the explorer as the browser showed it
        assert (demo_pages.OUTPUT / name).read_bytes().startswith(b"\x89PNG")
    assert [p["words"][0] for p in run.predictions] == [s.split()[0] for s in demo_pages.GOLD]
    for path in demo_pages.OUTPUT.rglob("*"):
        if path.is_file() and path.suffix != ".png":
            assert str(ROOT) not in path.read_text(encoding="utf-8"), path
            if path.suffix == ".json":
                json.loads(path.read_text(encoding="utf-8"))
    counts = demo_pages.entity_counts(run)
    assert counts["total"] == sum(len(entities) for entities in demo_pages.GOLD.values())
    assert counts["found"] + len(counts["missed"]) == counts["total"]
