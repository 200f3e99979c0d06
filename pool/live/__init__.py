"""Live evaluation: any clinical question, answered tonight by a reference agent, becomes a reference item.

``python -m pool.run --live`` (or ``RunSpec(live=LiveRequest(...))``) takes questions from a file, the
command line or stdin; the pool file's ``reference_agent:`` answers each one, and the candidates are
judged against those answers by the reference contract, through the same judge or panel, in a ``live``
family of their own. What it measures is agreement with that agent, not truth. Rooms, in the data's order:

- :mod:`~pool.live.questions` — reading the questions, their ids (a hash of the normalised text, the same
  on every night), :class:`~pool.live.questions.LiveRequest`;
- :mod:`~pool.live.domains` — a question's domain: given, or inferred by the router's classifier;
- :mod:`~pool.live.agent` — ``reference_agent:`` resolved (a pool model, an endpoint or a command), the
  request it is sent per mode, the decoration lines stripped from its answers;
- :mod:`~pool.live.command` — a command as an agent: run without a shell, with a timeout;
- :mod:`~pool.live.references` — the agent asked through the run machinery, into a run store of its own;
- :mod:`~pool.live.prepare` — the live step of a run: ``RUN_DIR/live/`` (request, references, the live
  items that become the run's data) and what the agent's failures come to.

:mod:`pool.api` calls :mod:`~pool.live.prepare` before a live run starts (and on ``--resume`` of one stopped
while its agent answered); ``docs/live.md`` is the guide.
"""
