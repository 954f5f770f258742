"""bitcode_allennlp: an AllenNLP plugin for contrastive hashing of language-model states into binary codes.

AllenNLP 2.10.1 and allennlp-models 2.10.1 are NOT in install_requires: their metadata pins torch<1.13,
transformers<4.21 and spacy<3.4, which pip would enforce. `make install` installs them with --no-deps next to
the versions in constraints.txt; bitcode_allennlp.host.compat repairs what breaks.

The wheel carries `bitcode_allennlp.pth`, a start-up hook that installs the compatibility import hook before
the `allennlp` command imports AllenNLP (see bitcode_allennlp/host/compat.py). Both the regular and the editable
(PEP 660) wheel get it.

The regular wheel also carries the configs and the fixtures they default to (`RESOURCES` in
bitcode_allennlp/resources.py) in bitcode_allennlp/_resources/, so that they are there without the repository; a
checkout uses its own folders.
"""
import os
import runpy
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

PTH = "bitcode_allennlp.pth"
HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithPth(build_py):
    """Puts the start-up hook at the root of the wheel, i.e. into site-packages, and the resources (configs,
    default data) into bitcode_allennlp/_resources/, laid out as in the repository."""

    def run(self):
        super().run()
        self.copy_file(os.path.join(HERE, PTH), os.path.join(self.build_lib, PTH))
        resources = runpy.run_path(os.path.join(HERE, "bitcode_allennlp", "resources.py"))
        for name in resources["resource_files"](Path(HERE)):
            target = os.path.join(self.build_lib, "bitcode_allennlp", "_resources", name)
            self.mkpath(os.path.dirname(target))
            self.copy_file(os.path.join(HERE, name), target)


cmdclass = {"build_py": BuildPyWithPth}

try:
    from setuptools.command.editable_wheel import editable_wheel
except ImportError:  # setuptools < 64: `pip install -e` uses `develop`
    editable_wheel = None

if editable_wheel is not None:

    class EditableWheelWithPth(editable_wheel):
        """Adds the start-up hook to the editable wheel, which does not run build_py into its root."""

        def _create_wheel_file(self, bdist_wheel):
            wheel_path = super()._create_wheel_file(bdist_wheel)
            from wheel.wheelfile import WheelFile

            with WheelFile(wheel_path, "a") as wheel:
                wheel.write(os.path.join(HERE, PTH), PTH)
            return wheel_path

    cmdclass["editable_wheel"] = EditableWheelWithPth

with open(os.path.join(HERE, "requirements.txt")) as f:
    install_requires = [line.split("#")[0].strip() for line in f if line.split("#")[0].strip()]

setup(
    name="bitcode_allennlp",
    version=open(os.path.join(HERE, "bitcode_allennlp", "version.py")).read().split('"')[1],
    description="Contrastive hashing of pre-trained language model states into short binary codes per word "
    "(AllenNLP plugin)",
    long_description=open(os.path.join(HERE, "README.md")).read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    packages=find_packages(include=["bitcode_allennlp", "bitcode_allennlp.*"]),
    python_requires=">=3.11",  # numpy 2.4.6 (both constraint files) and transformers 5.24 need it
    install_requires=install_requires,
    # selenium: the explorer's browser tests; pytest-xdist: `make test`'s two workers; ruff: `make lint`
    extras_require={"test": ["pytest>=7", "pytest-xdist>=3", "hypothesis>=6", "selenium>=4.10", "ruff>=0.5"]},
    package_data={"bitcode_allennlp.bits": ["explorer/*.html", "explorer/*.js", "explorer/*.css"]},
    entry_points={
        "spacy_factories": [
            f"bitcode_{task} = bitcode_allennlp.spacy_components.component:make_bitcode_{task}"
            for task in ("tagger", "ner", "parser")
        ],
    },
    cmdclass=cmdclass,
)
