"""The theory screen: which local models are worth running, from published evidence, before any is run.

``python -m routing.screen`` (``__main__``) reads evidence entries and a pool file's models and writes
``shortlist.yaml`` and ``screen.md``; no model is called. Modules, in the order the data goes:

- ``evidence`` — the evidence entries (markdown files with YAML front matter), checked field by field;
- ``models`` — the candidates (a pool file's models read with ``yaml.safe_load``, or names) and what a
  name says: family (the extendable family list) and size;
- ``formula`` — every weight once (``Weights``, each a flag) and the terms: rank, authority with
  cadence, verdict, contamination, relevance, size proximity, the neutral prior, the tiers;
- ``score`` — champions scored, each candidate against its family's champions, ceiling references;
- ``shortlist`` — ``shortlist.yaml`` written and read (``pool.run --from-shortlist`` and
  ``routing.scenario`` read it);
- ``page`` — ``screen.md``.

What comes after a run of the shortlisted models, theory against measurement, is ``routing.scenario``.
"""
