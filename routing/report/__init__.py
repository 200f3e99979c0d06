"""report: the build's files a person reads.

``page`` (``report.html``: the page, its sections listed once in ``SECTIONS``, the splicing of the
sections added after the build) draws each part with a module of ``sections/`` from the cells of
``html`` (every text escaped); ``markdown`` writes ``leaderboard.md`` (and formats numbers for the
rest); ``digest`` is the end-of-run digest of judged answers (``python -m routing.digest``).
"""
