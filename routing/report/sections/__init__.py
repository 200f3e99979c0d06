"""sections: one module per part of ``report.html``, each a function from the build's documents to HTML.

``runs``, ``manifest`` (routing manifest and its validation), ``boards`` (a family's leaderboards and
the specialty heatmap), ``objective``, ``cost``, ``pairwise`` (score-derived ratings, and the judged
battles of the pairwise stage beside them), ``hard``, ``judge_reliability``,
``judge_panel``, ``freshness`` (gold a freshness audit found drifted), ``estimated``
(models scored adaptively). A section returns "" when the
build holds nothing for it; the page's ``SECTIONS`` list (:mod:`routing.report.page`) gives each its
place, anchor and link.
"""
