"""Crash Course: the small runtime the book builds, one idea per module.

Chapters import from here; a chapter that shows a simplified draft names it as a
draft (``claim_naive``) and never exports it. See README.md for the chapter map.
"""

__version__ = "0.1.0"
