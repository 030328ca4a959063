"""Figure plumbing shared by the experiments: a headless pyplot and one way to save."""

from __future__ import annotations

import os


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend (experiments run headless)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path: str, rect=None) -> str:
    """Lay out (within ``rect``, e.g. to leave room for a suptitle), write ``path`` (PNG,
    its folder created) and close ``fig``; returns ``path``."""
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    if rect is None:
        fig.tight_layout()
    else:
        fig.tight_layout(rect=rect)
    fig.savefig(path, dpi=110)
    pyplot().close(fig)
    return path
