"""The outside world of the shop assistant: services with their own stores.

A service is called by its address, never through a connection the caller
holds: ``payments`` (chapters 00-04, with the approvals' ``authority`` and the
``budget`` in its own file), ``mail`` and ``drive`` (chapter 07) by the path
of their SQLite file, opened for each call; the ``supplier`` (chapter 06), a
real HTTP server process with its own file, by its URL (``supplier`` is the
client; ``supplier.store`` what it stores and answers; ``supplier.request``
how it reads a request off the wire, refusing bad framing before anything is
decided; ``supplier.server`` the process; ``supplier.process`` starts it);
the credential ``broker`` (chapter 09) by path, which guarded services ask
before every write. Each creates its tables with ``install``, and each opens
its file as a system of record (``store.opened(..., record=True)``).
"""

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["broker", "drive", "mail", "payments", "supplier"]
