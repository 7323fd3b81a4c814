"""Stored plans on a PostgreSQL store: ``plan``'s words that differ there
(chapter 10).

``plan`` keeps SQLite's words beside its queries (``plan.SQLITE``) and takes
these, under the same names, for a server's store (``store.dialect``):

* ``without_rowid``: a SQLite table option; every PostgreSQL table is keyed
  by its primary key alone already, so there is nothing to say;
* ``columns``: which columns ``plans`` has (the format before issue 11 had a
  ``body``), read from the catalogue the server keeps per schema;
* ``steps``: the step rows, one statement for a whole plan: the JSON list of
  each step's canonical text, numbered from 1 in its order.

Only strings: nothing here talks to a server, so ``plan`` imports it freely.
"""

POSTGRES = {
    "without_rowid": "",
    "columns": "SELECT column_name FROM information_schema.columns"
               " WHERE table_schema = current_schema() AND table_name = 'plans'",
    "steps": "SELECT :task, number, step"
             " FROM json_array_elements_text(:steps::json)"
             " WITH ORDINALITY AS given (step, number)",
}
