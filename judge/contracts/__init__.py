"""Judge contracts: what the judge is asked and how its reply becomes a score, one module each.

A contract is ONE declaration, ``SPEC = ContractSpec(...)`` in the module named after it (name,
template, prompt builder, verdict JSON Schema, parser, verdict → score); ``table`` collects them
and is the only place a contract is looked up by name (``contract_spec``, ``prompt_version``,
``output_schema``, ``request_schema``, ``reask_prompt``). A guide: ``docs/adding-a-judge-contract.md``.

- ``spec``            — :class:`ContractSpec`: the fields, the prompt version, the re-ask
- ``table``           — ``CONTRACT_SPECS`` by name; refuses unknown names ("did you mean …")
- ``framing``         — what every prompt shares: the fenced answer, the framed question, the re-ask text
- ``rubric_verdict``  — what the two rubric contracts share: output spec, schema, the Score of a verdict
- ``reference``       — rubric verdict against a reference answer (gold type ``reference``)
- ``criteria``        — rubric verdict against topics / warnings / forbidden content, context labels
- ``criteria_items``  — criterion-by-criterion met / not met, and the points scheme that scores it
- ``probe``           — success / failure on a hallucination probe, and the observed behaviour
- ``hallu``           — atomic claims labelled supported / unsupported / not_sure (``--hallu``)
- ``freshness``       — a gold point still current / drifted / uncertain against the latest guideline
                        (``python -m pool.freshness``)
- ``pairwise``        — two candidates' answers side by side: A, B or tie (``python -m pool.pairwise``)

Parsers live in ``judge.parse`` (one per verdict shape); each contract names its own in its SPEC.
"""
