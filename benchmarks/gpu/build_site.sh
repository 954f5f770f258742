#!/bin/bash
# Run from the repository root: bash benchmarks/gpu/build_site.sh 3.12 site312 (wheels in .dev/whl, Python 3.12;
# .dev/whl311 for a Python 3.11 copy to try the same steps here). Prunes what only an import needs to exist.
# build_site.sh PYVER OUTDIR: the AllenNLP stack the GPU image lacks, pruned (import-only data, debug symbols).
set -e
PYVER=$1; OUT=$2; cd "$(dirname "$0")/../../.dev"
rm -rf $OUT
PLAT="--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_34_x86_64 --platform manylinux_2_31_x86_64 --platform any"
if [ "$PYVER" = 3.12 ]; then W=whl; else W=whl311; fi
pip install -q --no-deps --no-compile --target $OUT --python-version $PYVER --implementation cp --only-binary=:all: $PLAT $W/*.whl
cd $OUT
rm -rf botocore/data/*/ 
find . -name "__pycache__" -prune -exec rm -rf {} +
find . \( -name "*.pyx" -o -name "*.pxd" -o -name "*.cpp" -o -name "*.c" -o -name "*.h" -o -name "*.pyi" \) -delete
find spacy/lang -mindepth 1 -maxdepth 1 -type d ! -name en ! -name xx -exec rm -rf {} +
rm -rf spacy/tests thinc/tests srsly/tests blis/tests nltk/test
find transformers/models -mindepth 2 -maxdepth 2 \( -name "modeling_*" -o -name "convert_*" -o -name "image_processing_*" -o -name "video_processing_*" -o -name "feature_extraction_*" \) ! -path "*/bert/*" ! -path "*/auto/*" ! -path "*/encoder_decoder/*" ! -path "*/xlnet/*" ! -path "*/albert/*" ! -path "*/bart/*" ! -path "*/roberta/*" ! -path "*/gpt2/*" ! -path "*/t5/*" -delete
find . -name "*.so" -exec strip --strip-unneeded {} \;
du -sh .
