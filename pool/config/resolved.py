"""The pool as a run uses it: :class:`PoolConfig`, a pool file whose cross-references hold, with
``defaults:`` folded into every model.

The blocks of the file are validated on their own first (:mod:`pool.config.schema`); only then are
the cross-references checked (:mod:`pool.config.refs`: a model's backend, the judge's model,
unique names, per-backend keys), so a badly broken file may need two rounds of fixes. The queries a
run asks of its pool (a model by name, the judges, prices, the fingerprint) live here.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import ValidationError, model_validator

from pool.config.refs import reference_issues
from pool.config.schema import (
    BACKEND_SPECIFIC_KEYS,
    NOT_RESULT_SHAPING,
    Judge,
    LlamaCppBackend,
    Model,
    OllamaBackend,
    OpenAIBackend,
    PoolFile,
    Price,
)


class PoolConfig(PoolFile):
    """A validated pool; ``models`` already carry their defaults."""

    @model_validator(mode="wrap")
    @classmethod
    def _resolve(cls, data: Any, handler: Any) -> PoolConfig:
        config: PoolConfig = handler(data)
        issues = reference_issues(config)
        if issues:
            raise ValidationError.from_exception_data(cls.__name__, issues)
        return config.model_copy(update={"models": tuple(map(config._with_defaults, config.models))})

    def _with_defaults(self, model: Model) -> Model:
        takes = self.backends[model.backend].generation_keys()
        inherited = {
            key: getattr(self.defaults, key)
            for key in self.defaults.model_fields_set - model.model_fields_set
            if key in Model.model_fields and (key not in BACKEND_SPECIFIC_KEYS or key in takes)
        }
        return model.model_copy(update=inherited)

    # ---- queries -------------------------------------------------------------------------

    def model(self, name: str) -> Model:
        for entry in self.models:
            if entry.name == name:
                return entry
        raise KeyError(f"no pool model '{name}'; pool models: {', '.join(m.name for m in self.models)}")

    def enabled_models(self) -> tuple[Model, ...]:
        return tuple(m for m in self.models if m.enabled)

    def backend_of(self, model: Model) -> OpenAIBackend | OllamaBackend | LlamaCppBackend:
        return self.backends[model.backend]

    def price_of(self, model: Model) -> Price | None:
        """The model's own price, else its backend's, else None (unpriced: its cost is unknown, not 0)."""
        return model.price or self.backends[model.backend].price

    def judge_model(self) -> Model | None:
        """The judge, or a panel's first member (its lead: what ``--hallu``, ``--rejudge-sample`` and
        ``--anchor-sample`` ask), as a complete :class:`Model` (see :class:`Judge` for the precedence)."""
        members = self.judge_models()
        return members[0] if members else None

    def judge_models(self) -> tuple[Model, ...]:
        """Every judge of the pool as a complete :class:`Model`: the ``judges:`` panel in file
        order, or the one ``judge:``, or none."""
        if self.judges:
            return tuple(self._judge_as_model(entry, f"judge-{index}") for index, entry in enumerate(self.judges, 1))
        return (self._judge_as_model(self.judge, "judge"),) if self.judge is not None else ()

    def reference_agent_model(self) -> Model | None:
        """A live run's reference agent as a complete :class:`Model` when it is a pool model or an
        endpoint (like the judge); None when it is a command (``argv:``) or there is none."""
        agent = self.reference_agent
        if agent is None or agent.argv is not None:
            return None
        return self._judge_as_model(agent, "reference-agent")

    def _judge_as_model(self, judge: Judge, default_name: str) -> Model:
        overrides = judge.generation_overrides()
        if judge.backend is None:
            assert judge.model is not None  # checked at validation
            return self.model(judge.model).model_copy(update=overrides)
        name = judge.name or default_name
        return Model(
            name=name,
            backend=judge.backend,
            model=judge.model or name,
            gguf=judge.gguf,
            chat_format=judge.chat_format,
            notes=judge.notes,
            **overrides,
        )

    def fingerprint(self) -> str:
        """sha256 of the resolved pool (models sorted by name) without api_key_env or notes.

        Resolved, so moving a value between ``defaults:`` and an entry keeps the fingerprint;
        env var names and notes do not change any answer, so they are left out. Every other
        backend setting is in, defaults included: limits and the response caps
        (``max_response_bytes``, ``max_answer_chars``) decide which results a run records.
        """
        judges = [
            judge.model_dump(mode="json", exclude={"notes", *NOT_RESULT_SHAPING}) for judge in self.judge_models()
        ]
        payload = {
            "schema": 1,
            "backends": {
                name: backend.model_dump(mode="json", exclude={"api_key_env", *NOT_RESULT_SHAPING})
                for name, backend in sorted(self.backends.items())
            },
            "models": sorted(
                (m.model_dump(mode="json", exclude={"notes", *NOT_RESULT_SHAPING}) for m in self.models),
                key=lambda entry: entry["name"],
            ),
            "judge": judges[0] if len(judges) == 1 and not self.judges else None,
            **({"judges": judges, "panel_rule": self.panel_rule} if self.judges else {}),
            **({"criteria_grading": self.criteria_grading} if self.criteria_grading != "holistic" else {}),
            **({"reask_short_answers": True} if self.reask_short_answers else {}),
        }
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
