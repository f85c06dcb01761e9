"""Copy TorchRec's DLRM trainer (`torchrec_dlrm/dlrm_main.py` of facebookresearch/dlrm) at the
pinned commit into tests/data, byte for byte, with the repository's licence.

The trainer is on no package index (the torchrec wheels carry the library, not this example),
so the file whose `parse_args` the tests run is a copy (SOURCE.json records the commit and each
file's SHA-256; tests/test_dlrm_release.py checks them). The commit is the one
`rightsize.export.fw_recsys.DLRM_COMMIT` names:

    git clone https://github.com/facebookresearch/dlrm /tmp/dlrm
    python tests/data/dlrm_release.py /tmp/dlrm

The copies end in `.txt` (Meta's code, MIT licence, kept out of this project's linters).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

COMMIT = "090956ee2319ddd349a42232958aefccfe3f7b0a"
FILES = ("torchrec_dlrm/dlrm_main.py", "torchrec_dlrm/README.MD", "LICENSE")
HERE = Path(__file__).resolve().parent
OUT = HERE / f"torchrec_dlrm_{COMMIT[:7]}"


def copy_release(clone: Path) -> dict[str, object]:
    sums = {}
    for path in FILES:
        data = subprocess.run(
            ["git", "-C", str(clone), "show", f"{COMMIT}:{path}"], check=True, capture_output=True
        ).stdout
        dest = OUT / (path + ".txt")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        sums[path] = hashlib.sha256(data).hexdigest()
    source = {
        "repository": "https://github.com/facebookresearch/dlrm",
        "commit": COMMIT,
        "copied": datetime.now(UTC).strftime("%Y-%m-%d"),
        "license": "MIT (LICENSE, copied with the files)",
        "sha256": sums,
    }
    (OUT / "SOURCE.json").write_text(json.dumps(source, indent=1, sort_keys=True) + "\n")
    return source


if __name__ == "__main__":
    copy_release(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/dlrm"))
