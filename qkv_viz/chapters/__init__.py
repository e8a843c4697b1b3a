"""One sub-package per chapter of the book, named by number and topic.

A chapter holds that chapter's computations, figures, widgets and exercise
checkers. It may import ``qkv_viz.core``, ``qkv_viz.bridges``, ``qkv_viz.viz``
and ``qkv_viz.chapters.feedback``, never another chapter
(``tests/chapters/test_layers.py`` checks it). A notebook imports its own
chapter: ``from qkv_viz.chapters import ch04_scaling as ch04``.
"""
