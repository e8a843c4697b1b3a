"""A BERT WordPiece tokenizer read straight from ``tokenizer.json`` (no transformers).

Uses the small ``tokenizers`` package (part of the optional extra ``real``).
The packaged all-MiniLM-L6-v2 ``tokenizer.json`` truncates and pads every
sentence to 128 tokens; we switch both off so a sentence keeps exactly its
own tokens, and check the length against the model's position table ourselves.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Encoding:
    """One tokenized sentence: ``ids`` (T,) int64 and the T token strings
    (including the special ``[CLS]`` first and ``[SEP]`` last)."""

    ids: np.ndarray
    tokens: tuple

    def __len__(self) -> int:
        return len(self.tokens)


def load_tokenizer(path):
    """A ``tokenizers.Tokenizer`` from ``tokenizer.json`` with truncation and padding off.

    path: the file itself or the model directory holding it.
    """
    from tokenizers import Tokenizer  # optional extra "real"

    path = Path(path)
    file = path / "tokenizer.json" if path.is_dir() else path
    if not file.is_file():
        raise FileNotFoundError(f"tokenizer file not found: {file} (from path={str(path)!r})")
    tok = Tokenizer.from_file(str(file))
    return plain_tokenizer(tok)


def plain_tokenizer(tok):
    """Switch off truncation and padding of a ``tokenizers.Tokenizer`` (in place); return it."""
    tok.no_truncation()
    tok.no_padding()
    return tok


def encode(tokenizer, sentence, max_len: int) -> Encoding:
    """Tokenize one sentence; raise a clear error for bad input.

    sentence: a non-empty string. max_len: the model's longest sequence
    (its number of position embeddings, 512 for BERT); the count includes
    ``[CLS]`` and ``[SEP]``.
    """
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a string, got {type(sentence).__name__}: {sentence!r}")
    if not sentence.strip():
        raise ValueError("sentence is empty: type at least one word")
    enc = tokenizer.encode(sentence)
    n = len(enc.ids)
    if n > max_len:
        raise ValueError(
            f"sentence is too long: {n} tokens (with [CLS] and [SEP]) but the model has only "
            f"{max_len} position embeddings; shorten it by {n - max_len} tokens")
    return Encoding(ids=np.asarray(enc.ids, dtype=np.int64), tokens=tuple(enc.tokens))
