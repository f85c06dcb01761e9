"""Copy torchvision's classification reference (`references/classification/train.py`) of release
0.21.0 into tests/data, byte for byte, with its licence.

The torchvision wheels carry the library, not `references/`, so the file whose
`get_args_parser` the tests run is a copy. It is taken from Debian's source package of the
release, `pytorch-vision_0.21.0.orig.tar.gz` (Debian trixie, pytorch-vision 0.21.0-3): the
upstream tag's source archive, not repacked (no +dfsg), whose SHA-256 Debian's Sources index
lists; SOURCE.json records it and each file's SHA-256 (tests/test_torchvision_release.py checks
them). With a deb-src line for trixie:

    apt-get source --download-only pytorch-vision=0.21.0-3
    python tests/data/torchvision_release.py pytorch-vision_0.21.0.orig.tar.gz

The copies end in `.txt` (PyTorch's code, BSD-3-Clause, kept out of this project's linters).
"""

from __future__ import annotations

import hashlib
import json
import sys
import tarfile
from datetime import UTC, datetime
from pathlib import Path

VERSION = "0.21.0"
TARBALL_SHA256 = "0a4a967bbb7f9810f792cd0289a07fb98c8fb5d1303fae8b63e3a6b05d720058"
FILES = (
    "references/classification/train.py",
    "references/classification/README.md",
    "LICENSE",
    "version.txt",
)
HERE = Path(__file__).resolve().parent
OUT = HERE / f"torchvision_v{VERSION}"


def copy_release(tarball: Path) -> dict[str, object]:
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    if digest != TARBALL_SHA256:
        sys.exit(f"{tarball} has SHA-256 {digest}, Debian lists {TARBALL_SHA256}")
    sums = {}
    with tarfile.open(tarball) as tar:
        for path in FILES:
            member = tar.extractfile(f"vision-{VERSION}/{path}")
            assert member is not None, path
            data = member.read()
            dest = OUT / (path + ".txt")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            sums[path] = hashlib.sha256(data).hexdigest()
    source = {
        "repository": "https://github.com/pytorch/vision",
        "tag": f"v{VERSION}",
        "archive": f"Debian pytorch-vision_{VERSION}.orig.tar.gz (trixie, 0.21.0-3), SHA-256 {TARBALL_SHA256}",
        "copied": datetime.now(UTC).strftime("%Y-%m-%d"),
        "license": "BSD-3-Clause (LICENSE, copied with the files)",
        "sha256": sums,
    }
    (OUT / "SOURCE.json").write_text(json.dumps(source, indent=1, sort_keys=True) + "\n")
    return source


if __name__ == "__main__":
    copy_release(Path(sys.argv[1]))
