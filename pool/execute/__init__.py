"""Execute a plan: send each unit's request and record its answer.

- :mod:`~pool.execute.session` is the one way in: a run's :class:`~pool.execute.session.Session` opens the
  backends where the executor runs them and sends units through the scheduler;
- :mod:`~pool.execute.endpoints` brings a plan's backends up (runners, the managed llama.cpp servers);
- :mod:`~pool.execute.executor` and :mod:`~pool.execute.ray_executor` are where requests are sent from
  (asyncio lanes in this process, or one Ray actor per backend lane); the executor module also
  declares what they send (a ``Job``) and through what (a backend's ``Lane``);
- :mod:`~pool.execute.scheduler` drives them: the response cache (:mod:`~pool.execute.response_cache`,
  keyed by :mod:`~pool.execute.cache_key`), the cost and token budget (:mod:`~pool.execute.budget`),
  progress (:mod:`~pool.execute.progress`), and the run store's rows;
- :mod:`~pool.execute.dispatch` turns a unit into the request its model and item call for.
"""
