"""The running example as an agent in other people's frameworks (chapter 12).

One worker module per framework, each a program the chapter 12 experiment
starts as a real child process and kills: ``langgraph_agent`` (the prebuilt
tool-calling agent and the functional API, SQLite checkpointer),
``dbos_agent`` (a DBOS workflow whose tool calls are steps, SQLite system
database), ``pydantic_ai_agent`` (Pydantic AI under its DBOS durable
execution), ``temporal_agent`` (a Temporal workflow whose tool calls are
activities, against a dev server), ``restate_agent`` (a Restate
workflow whose calls are ``ctx.run`` steps, against the server from npm,
``restate_server``) and ``openai_agents_agent`` (the OpenAI Agents SDK with
a scripted ``Model``, resumed from a saved ``RunState``). What they
share, the shop's three tools, the scripted model and the key a tool
sends, is ``shop``; where each framework keeps its record of a tool call, read by
the parent from the framework's own database, is ``records``.

These modules import their framework: nothing in the runtime imports them,
and they run only where the package's ``frameworks`` extra put the
frameworks (``pip install "/path/to/clone[frameworks]"``; the book's lock
pins them).
"""

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["records", "shop"]
