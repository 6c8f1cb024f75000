"""Generated sections of the docs: the text between a BEGIN and an END marker in a page, rewritten from the code by
``make docs`` (the rule table, the pins table, the fit formula, the stack-file reference); tests fail when a page and
its source differ. One home for how a section is found and replaced."""

from __future__ import annotations

import re


def replace_section(document: str, begin: str, end: str, body: str, page: str = "the page") -> str:
    """``document`` with the text between the ``begin`` and ``end`` marker lines replaced by ``body``."""
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.S)
    if not pattern.search(document):
        raise ValueError(f"{page}: the markers {begin!r} ... {end!r} are missing")
    return pattern.sub(lambda _: f"{begin}\n{body}{end}", document)
