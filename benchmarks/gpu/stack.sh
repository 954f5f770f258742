# Sourced from the repository root by the device scripts (setup_probe.sh, speed.sh, curve.sh), after the pruned
# AllenNLP stack is unpacked into /tmp/site: its import path, the package's start-up hook (compat shims before
# AllenNLP loads, as an install would place it) and an `allennlp` command.
export PYTHONPATH=/tmp/site:$PWD HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
cp bitcode_allennlp.pth "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"
mkdir -p /tmp/bin && printf "#!/bin/bash\nexec python3 -m allennlp \"\$@\"\n" > /tmp/bin/allennlp && chmod +x /tmp/bin/allennlp
export PATH=/tmp/bin:$PATH
