"""``python -m eval.decision_recognition``: the same as ``python -m pool.decision_recognition``.

The CLI is ``eval.decision_recognition.cli``; ``pool.decision_recognition`` runs it with the runners'
embeddings client for ``--embeddings-url``. It is started by name, not imported, because ``eval``
imports nothing of ours outside itself.
"""

import runpy

if __name__ == "__main__":  # importing this module (e.g. to look for a parser) runs nothing
    runpy.run_module("pool.decision_recognition", run_name="__main__", alter_sys=True)
