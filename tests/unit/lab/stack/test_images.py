"""lab.stack.compose.images: the offline chat image's tag is a hash of every file its build
copies in -- a key that missed one would reuse a stale image after that file changed."""

from __future__ import annotations

import re

from lab.common.config import ROOT
from lab.stack.compose.images import CHAT_DOCKERFILE, chat_inputs, content_hash


def test_the_chat_image_key_covers_every_copy_source() -> None:
    sources = re.findall(r"^COPY\s+(\S+)\s", CHAT_DOCKERFILE.read_text(), re.M)
    assert sources, "the Dockerfile copies files in"
    covered = [p for p in chat_inputs() if not isinstance(p, bytes)]
    for src in sources:
        path = (ROOT / src).resolve()
        assert any(path == c or c in path.parents for c in covered), f"{src} is not in the image's key"


def test_the_key_moves_with_content_and_only_with_it() -> None:
    assert content_hash(b"a", CHAT_DOCKERFILE) == content_hash(b"a", CHAT_DOCKERFILE)
    assert content_hash(b"a", CHAT_DOCKERFILE) != content_hash(b"b", CHAT_DOCKERFILE)
    assert len(content_hash(*chat_inputs())) == 12
