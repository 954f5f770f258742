"""The README's quick start (the first code block of "Main commands": train, predict | bits table, evaluate), run
as a user types it in a fresh folder: it works, and nothing it prints or packages holds an absolute path of this
machine (the checkout, the folder, the virtual environment)."""
import os
import re
import subprocess
import sys
import tarfile

from tests.conftest import ROOT


def quick_start_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Main commands"):]
    block = re.search(r"```\n(.*?)```", section, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_quick_start_prints_and_packages_no_absolute_path(tmp_path):
    for name in ("training_configs", "fixtures"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "runs").mkdir()
    commands = quick_start_commands()
    assert [c.split()[1] for c in commands if c.startswith("allennlp ")] == ["train", "predict", "evaluate"]
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    printed = []
    for command in commands:
        result = subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, f"{command}\n{result.stderr[-3000:]}"
        printed.append(result.stdout + result.stderr)
    forbidden = {str(ROOT), str(tmp_path), os.path.realpath(tmp_path), sys.prefix}
    for command, text in zip(commands, printed):
        assert not [path for path in forbidden if path in text], f"{command} printed an absolute path:\n{text}"
    assert "Obama" in printed[2] and "f1-measure-overall" in printed[3]
    with tarfile.open(tmp_path / "runs" / "ner" / "model.tar.gz") as archive:
        for member in archive.getmembers():
            if member.isfile() and member.name != "weights.th":
                text = archive.extractfile(member).read().decode("utf-8", "replace")
                assert not [path for path in forbidden if path in text], member.name
