"""Weights from elsewhere, in the book's layout (``Q = X @ W_q``, W_q of shape (d_model, H d_k)).

- ``torch_mha``: copy a ``torch.nn.MultiheadAttention`` into :class:`qkv_viz.core.MultiHeadParams`.
- ``real_model``, ``real_tokenizer``, ``real_forward``: a real BERT-family model
  (all-MiniLM-L6-v2) loaded from disk with ``safetensors`` and ``tokenizers``, run in numpy, offline.

Bridges import the core, never viz or a chapter. torch is imported only inside the functions
that need it (``torch_mha``, and ``real_forward.transformers_outputs`` for the comparison with
``transformers``), never when a bridge module is imported.
"""
