"""One module per backend protocol; every module here is imported when the backend types are listed.

A module declares its runner class and the settings block of each pool ``type`` it serves, and
registers them together with ``@backend("<type>", settings=...)`` (:mod:`runners.registry`). A new
backend type is one new module in this folder.
"""
