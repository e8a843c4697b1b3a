"""qkv-viz: Query, Key and Value, computed and drawn.

The package is built in layers; each imports only the layers below it:

- ``qkv_viz.core``: the maths, numpy only (re-exported here: ``qv.softmax``, ...)
- ``qkv_viz.bridges``: weights from elsewhere (torch, a real BERT-family model)
- ``qkv_viz.viz``: chapter-free pictures and widget parts
- ``qkv_viz.chapters``: one sub-package per chapter (``ch04_scaling``, ...)

``import qkv_viz`` loads only the core, so it stays light.
"""
from .core import *  # noqa: F401,F403
from .core import __all__ as _core_all

__all__ = list(_core_all)
__version__ = "0.1.0"
