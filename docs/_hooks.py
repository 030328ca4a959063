"""MkDocs hook: render the Sphinx roles of the docstrings (:func:`x`, :class:`x`, ...) as code.

The docstrings are Google style but cross-reference with Sphinx roles, which Markdown shows
literally (":func:" before the code span). This drops the role and keeps the code span.
"""

import re

_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|obj|exc):(?=<code>)")


def on_page_content(html: str, **kwargs) -> str:
    return _ROLE.sub("", html)
