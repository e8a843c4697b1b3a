"""A trained layer for chapter 6: all-MiniLM-L6-v2's first attention layer, as plain numpy arrays."""
from __future__ import annotations

from qkv_viz.bridges.real_forward import run
from qkv_viz.bridges.real_model import load_model


def minilm_layer0(sentence: str):
    """The input and the weights of all-MiniLM-L6-v2's layer 0 for ``sentence``.

    Returns ``tokens, X, p, model_maps``:

    - ``tokens``: the T token strings, with [CLS] first and [SEP] last (the tokenizer adds them);
    - ``X`` (T, 384): the vectors entering layer 0 (word, position and type embeddings added, then LayerNorm);
    - ``p``: a ``MultiHeadParams`` of numpy arrays, ``W_q``, ``W_k``, ``W_v`` (384, 384) in the book's
      ``X @ W`` layout, ``W_o`` (384, 384), and the biases ``b_q``, ``b_k``, ``b_v``, ``b_o`` (384,);
      the layer has 12 heads of width 32;
    - ``model_maps`` (12, T, T): the weights the model's own forward pass computes in layer 0, to compare.

    Chapter 9 opens the model up: tokenizer, embeddings and every layer.
    """
    model = load_model()                    # offline: the parameters ship as a Python package
    trace = run(model, sentence)
    return list(trace.tokens), trace.hidden_states[0], model.layers[0].attn, trace.weights[0]
