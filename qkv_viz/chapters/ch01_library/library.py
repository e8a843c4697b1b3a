"""The library analogy in numbers: books with keys and values, hard vs soft lookup.

A *library* holds ``n_books`` books. Each book has a key vector (its spine
label, width ``d_k``) and a value vector (its content, width ``d_v``). A reader
brings a query (width ``d_k``). The score of a book is ``query . key``;

* a hard lookup returns the value of the best-scoring book (not the nearest key:
  a dot product rewards a long key as well as a well-aimed one): the page's argmax;
* soft attention (``soft_lookup``) returns ``softmax(scores / temperature) @ values``, a blend.

The temperature slides soft attention between the two ends: very hot gives
the plain average of all books, very cold gives the hard lookup.
Scores are *not* divided by sqrt(d_k) here (``scale=False``): the keys are
hand-made, and the temperature plays that role.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qkv_viz.core.validate import as_array, positive_number
from qkv_viz.core.attention import scaled_dot_product_attention

KEY_AXES = ("AI (+) or history (−)", "about food")  # what the two key coordinates mean: one scale from AI to history, and food
VALUE_AXES = ("AI facts", "recipes", "history")  # what the three value entries mean


@dataclass(frozen=True)
class Library:
    """Books with titles, keys (n_books, d_k) and values (n_books, d_v).

    ``short``: a short name per book, for labels in a crowded picture (default: the titles).
    """

    titles: tuple
    keys: np.ndarray
    values: np.ndarray
    short: tuple = ()

    def __post_init__(self):
        keys = as_array("keys", self.keys, ndim=2)
        values = as_array("values", self.values, ndim=2)
        titles = tuple(str(t) for t in self.titles)
        if not len(titles) == keys.shape[0] == values.shape[0]:
            raise ValueError(f"titles ({len(titles)}), keys {keys.shape} and values "
                             f"{values.shape} must describe the same number of books")
        if len(set(titles)) != len(titles):
            raise ValueError(f"titles must be unique, got {titles}")
        short = tuple(str(t) for t in self.short) or titles
        if len(short) != len(titles):
            raise ValueError(f"short names ({len(short)}) must be one per book ({len(titles)})")
        object.__setattr__(self, "titles", titles)
        object.__setattr__(self, "short", short)
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "values", values)

    @property
    def n_books(self) -> int:
        return len(self.titles)


def demo_library() -> Library:
    """Five books; keys in 2-D (AI (+) or history (-), about food), values in 3-D (AI facts, recipes, history)."""
    titles = ("Attention Explained", "Deep Learning Basics", "Kitchen Chemistry",
              "Robot Chefs", "A History of Libraries")
    keys = np.array([[2.0, 0.0],    # all AI
                     [1.5, 0.0],    # AI, a shorter label
                     [0.0, 2.0],    # all food
                     [1.2, 1.2],    # AI and food
                     [-1.5, 0.0]])  # history
    values = np.array([[0.9, 0.0, 0.1],
                       [0.8, 0.0, 0.2],
                       [0.0, 0.9, 0.1],
                       [0.5, 0.5, 0.0],
                       [0.0, 0.1, 0.9]])
    return Library(titles, keys, values, short=("Attention", "Deep Learning", "Kitchen", "Robot Chefs", "History"))


DEMO_QUERY = np.array([1.5, 0.5])  # "mostly AI, a little food"


def _query(query, library: Library) -> np.ndarray:
    query = as_array("query", query, ndim=1)
    if query.shape[0] != library.keys.shape[1]:
        raise ValueError(f"query has shape {query.shape} but the keys have d_k = "
                         f"{library.keys.shape[1]} (keys shape {library.keys.shape})")
    return query


def soft_lookup(query, library: Library, temperature: float = 1.0):
    """Soft attention over the books: ``(output (d_v,), weights (n_books,))``."""
    q = _query(query, library)
    temperature = positive_number("temperature", temperature)
    out, w = scaled_dot_product_attention(q[None, :], library.keys, library.values,
                                          scale=False, temperature=temperature)
    return out[0], w[0]  # (1, d_v), (1, n) -> (d_v,), (n,)
