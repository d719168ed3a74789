"""Which BFCL model handler read a result file, chosen the way ``bfcl evaluate`` chooses it.

``bfcl evaluate`` takes the model folder under its result directory (``result/<model>/…``), turns
``_`` back into ``/`` and looks the key up in its model config, whose entry names the handler
class and whether the model ran with function calling (``is_fc_model``); that handler's
``decode_execute`` reads every step (:mod:`.decoders`). The config module imports every provider
SDK, so it is read statically here: parsed with :mod:`ast`, never imported.

The key comes, in order, from ``--model`` (when it is a key), the result file's folders (the
nearest one that is a key), the ``model_name`` BFCL's score file recorded, the prefix a flat copy put
before BFCL's file name (``<key>_BFCL_v4_…``, in the folder spelling), and otherwise from the content:
the decoder that reads the most steps of the file as calls. How it was chosen is kept
with the choice, for the rollouts' meta and the audit summary.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from prefix_audit.plugin import RefusedOption

from .decoders import HANDLER_DECODERS, decoder_for
from .scores import bfcl_file_name

MODEL_CONFIG = "bfcl_eval/constants/model_config.py"
# A model key as a folder name holds it: letters, digits and . _ - + : @ in parts joined by "/".
_PLAUSIBLE_KEY = re.compile(r"^[\w.+:@-]+(/[\w.+:@-]+)*$")


@dataclass(frozen=True)
class ModelEntry:
    """One model of BFCL's model config: its key, handler class and whether it calls functions natively."""

    key: str
    handler: str
    is_fc: bool


@dataclass(frozen=True)
class HandlerChoice:
    """The handler that reads a result file and how it was chosen."""

    handler: str
    is_fc: bool
    key: str | None  # the model key of BFCL's config, None when chosen by content
    chosen_by: str  # "--model", "result folder", "score file", "file name" or "content"
    decoder: str = ""  # the decoder's name (:mod:`.decoders`)

    def to_json(self) -> dict[str, object]:
        return {"handler": self.handler, "is_fc": self.is_fc, "model_key": self.key, "chosen_by": self.chosen_by,
                "decoder": self.decoder}

    def describe(self) -> str:
        if self.key is None:
            return (f"decoder {self.decoder} chosen by content (as {self.handler} reads with is_fc_model="
                    f"{self.is_fc}): no model key of BFCL's config in --model, the result folders, the score file or "
                    f"the file name")
        return f"{self.handler} (is_fc_model={self.is_fc}) of model {self.key}, from the {self.chosen_by}"


class ModelConfigError(ValueError):
    pass


@lru_cache(maxsize=4)
def model_config(root: Path) -> dict[str, ModelEntry]:
    """Model key → entry, from the model config of the unpacked wheel at ``root``."""
    path = Path(root) / MODEL_CONFIG
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (OSError, SyntaxError) as exc:
        raise ModelConfigError(f"cannot read BFCL's model config {path}: {exc}") from exc
    entries: dict[str, ModelEntry] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name) and value.func.id == "ModelConfig"):
                continue
            fields = {kw.arg: kw.value for kw in value.keywords}
            handler, is_fc = fields.get("model_handler"), fields.get("is_fc_model")
            if not (isinstance(handler, ast.Name) and isinstance(is_fc, ast.Constant)
                    and isinstance(is_fc.value, bool)):
                raise ModelConfigError(f"{path}:{value.lineno}: model {key.value!r} has no handler class and "
                                       f"is_fc_model flag to read")
            entries[key.value] = ModelEntry(key.value, handler.id, is_fc.value)
    if not entries:
        raise ModelConfigError(f"{path} holds no ModelConfig entries")
    return entries


def check_model_key(key: str) -> None:
    """Refuse a ``--model`` that no folder of a result directory could be named after."""
    if not _PLAUSIBLE_KEY.match(key) or any(part in (".", "..") for part in key.split("/")):
        raise RefusedOption(f"--model {key!r} is no plausible BFCL model key (letters, digits, . _ - + : @, "
                         f"parts joined by '/')")


def lookup(config: Mapping[str, ModelEntry], name: str) -> ModelEntry | None:
    """The entry for a key given as BFCL writes it in a key (``/``) or a folder name (``_`` for ``/``)."""
    return config.get(name) or config.get(name.replace("_", "/"))


def choose_handler(config: Mapping[str, ModelEntry], result: Path, model: str | None,
                   score_models: Iterable[str]) -> HandlerChoice | None:
    """The handler by model key — ``model`` (``--model``), the result file's folders, the score
    file's recorded model names, then the prefix of the file's name — or None when none of them is a key."""
    candidates: list[tuple[str, str]] = []
    if model:
        candidates.append((model, "--model"))
    candidates += [(folder.name, "result folder") for folder in result.resolve().parents if folder.name]
    candidates += [(name, "score file") for name in sorted(score_models)]
    named = bfcl_file_name(result)
    if named is not None and named.prefix:
        candidates.append((named.prefix, "file name"))
    for name, source in candidates:
        entry = lookup(config, name)
        if entry is not None and entry.handler in HANDLER_DECODERS:  # else: a newer wheel's class, read by content
            return HandlerChoice(entry.handler, entry.is_fc, entry.key, source, decoder_for(entry.handler,
                                                                                           entry.is_fc).__name__)
    return None
