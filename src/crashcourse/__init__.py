"""Crash Course: the small runtime the book builds, one idea per module.

Chapters import from here; a chapter that shows a simplified draft names it as a
draft (``claim_naive``) and never exports it. See README.md for the chapter map.
"""

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["adapters", "book", "boundary", "claims", "control", "effects",
    "figures", "journal", "lab", "powerloss", "services", "store", "validate",
    "waiting", "workers", "workflow"]

__version__ = "0.1.0"
