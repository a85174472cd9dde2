"""A stand-in for a real model: deterministic, but the reply depends on the input."""

import hashlib
import re
import time

OPENERS = ["Interesting question.", "Good point.", "Let me think about that.", "Here's my take.", "Short answer:"]
TEMPLATES = [
    'You mentioned "{w}" -- that usually depends on context.',
    'When it comes to "{w}", I\'d start with the basics.',
    '"{w}" is a big topic; can you narrow it down?',
    'I don\'t know much about "{w}", but I can guess.',
]


def generate_reply(message: str) -> str:
    time.sleep(0.1)  # pretend to be slow
    words = re.findall(r"[\w']+", message.lower())
    digest = int(hashlib.sha256(message.encode("utf-8")).hexdigest(), 16)
    opener = OPENERS[digest % len(OPENERS)]
    if not words:
        return f"{opener} I'm not sure what you mean."
    longest = max(words, key=len)
    body = TEMPLATES[(digest // 7) % len(TEMPLATES)].format(w=longest)
    return f"{opener} {body} ({len(words)} words received)"
