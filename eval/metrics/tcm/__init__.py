"""The metric families of the TCM benchmarks: ``linglan`` (char-F1, DTR-F1, multi-choice,
extraction, doses, after the LingLan methodology), ``chip`` (the CHIP TCM task's P1–P4 and total)
and ``chip_format`` (its submission file, read and written)."""
