"""gate: what a night's comparison could see, and whether the evidence of several nights adds up.

``detectable`` (the minimum detectable drop of each paired test at its night's n and Holm level, and
the status ``regressed`` / ``improved`` / ``no change`` / ``inconclusive``) → ``sequential`` (the
anytime-valid gate over nights, its state ``gate_sequential.json`` beside the run index);
``options`` holds the gate's command-line options (type, default, metavar), written once for every
command that compares nights.
"""
