"""bank: item banks fitted on the run history, and adaptive scoring on them (pure array functions, no I/O
but the history read and ``adaptive.json``).

- ``irt`` — the 2PL item response model fitted by MAP with scipy (difficulty and discrimination per
  item, ability per model), and the items with a negative slope (bad golds).
- ``adaptive`` — one model's adaptive test: maximum-information selection with randomesque exposure
  control, the ability posterior, the stop rule and the estimated full-suite score with its interval
  (posterior quantiles, widened by the bank's curve check against the history's real scores).
- ``history`` — per family, the model × item score matrix of the run index's runs, and its bank.
- ``estimates`` — a build's reading of ``adaptive.json``: ``estimated`` marks in the leaderboard and the
  manifest, and no estimated model as a decision's pick.
"""
