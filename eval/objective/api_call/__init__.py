"""The API-call check: extract the answer's call, check it against the declared signature and
compare its arguments with the reference call's (:mod:`~eval.objective.api_call.check`)."""
