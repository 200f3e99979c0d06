"""One module per suite file format, each declaring its ``LOADER`` (the format's name, file
suffixes, how it recognises a file and how it reads one into items):

- ``medpool_jsonl`` (format ``medpool``): the project's own JSONL, every field of ``Item``;
- ``reference``: reference-answer JSONL (the MedBench-Agent shape), one file per task;
- ``criteria``, ``probes``, ``tool_decision``: criteria-gold, hallucination-probe and tool-decision YAML;
- ``tcm_sd``: TCM-SD syndrome classification; ``chip``: CHIP TCM cases; ``linglan``: LingLan
  standardized items (``task_type`` / ``gold_answer``);
- ``calibration``: judge-calibration claims, recognised so that they are listed as skipped.

Adding a format is its module here plus its ``LOADER`` in the tuple of ``eval.loaders.registry``.
"""
