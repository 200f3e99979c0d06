"""Judge calibration: how well a pool's judge does on answers whose truth is known (``python -m pool.calibrate``).

- :mod:`~pool.calibrate.cli` reads the command line and picks one of the two calibrations;
- :mod:`~pool.calibrate.claims` labelled claims → P/R/F1 on ``unsupported``, 3-class accuracy (the default ``--set``);
- :mod:`~pool.calibrate.criteria` synthetic criteria answers → per-criterion P/R/F1 and the holistic ρ, for every
  judge of a panel and the panel (``--set criteria``), plain and probability-weighted (AUC of P(met), its threshold);
- :mod:`~pool.calibrate.criteria_text` the summary that calibration prints;
- :mod:`~pool.calibrate.judging` what both share: the judge set up as a run sets it up, asked with one re-ask,
  its identity in the calibration store, storing only a calibration whose calls all came back, the exit codes.
"""
