"""What the metrics read text with: ``tokens`` (the tokenisation and normalisation rules, each
written once), ``sequence`` (longest common subsequence, bit-parallel), ``prompts`` (template slots,
few-shot selection, conversation truncation) and ``parsing`` (JSON objects, tool calls, schema
checks and final answers in model output)."""
