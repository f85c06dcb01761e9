"""Variable blocks and sparse rows of the fleet's program, for scipy.optimize.milp."""

from __future__ import annotations

from typing import Any

import numpy as np


class Model:
    """Variable blocks and sparse rows for scipy.optimize.milp."""

    def __init__(self) -> None:
        self.blocks: dict[str, np.ndarray] = {}
        self.lb: list[np.ndarray] = []
        self.ub: list[np.ndarray] = []
        self.cost: list[np.ndarray] = []
        self.penalty: list[np.ndarray] = []
        self.tie: list[np.ndarray] = []
        self.integer: list[np.ndarray] = []
        self.n = 0
        self.days: np.ndarray = np.zeros(0)  # days of each month of the grid
        self.rows: list[tuple[np.ndarray, np.ndarray, float, float]] = []
        # one variable fixed at 0: slots where a job may not run point at it
        self.zero = int(self.add("zero", (1,), 0.0, 0.0)[0])
        self.blocks.pop("zero")

    def add(
        self,
        name: str,
        shape: tuple[int, ...],
        cost: Any,
        ub: Any = np.inf,
        integer: bool = False,
        role: str = "cost",  # cost | penalty (misses) | tie (tie-break, far below any price)
    ) -> np.ndarray:
        size = int(np.prod(shape))
        idx = np.arange(self.n, self.n + size).reshape(shape)
        self.n += size
        self.blocks[name] = idx
        c = np.broadcast_to(np.asarray(cost, dtype=float), shape).ravel()
        zero = np.zeros(size)
        self.cost.append(c if role == "cost" else zero)
        self.penalty.append(c if role == "penalty" else zero)
        self.tie.append(c if role == "tie" else zero)
        self.lb.append(np.zeros(size))
        self.ub.append(np.broadcast_to(np.asarray(ub, dtype=float), shape).ravel().copy())
        self.integer.append(np.full(size, 1 if integer else 0))
        return idx

    def row(self, cols: Any, vals: Any, lo: float, hi: float = np.inf) -> None:
        self.rows.append((np.asarray(cols, dtype=int).ravel(), np.asarray(vals, dtype=float).ravel(), lo, hi))

    def matrix(self) -> tuple[Any, np.ndarray, np.ndarray]:
        from scipy.sparse import coo_matrix

        r = np.concatenate([np.full(len(c), i) for i, (c, _, _, _) in enumerate(self.rows)])
        c = np.concatenate([c for c, _, _, _ in self.rows])
        v = np.concatenate([v for _, v, _, _ in self.rows])
        a = coo_matrix((v, (r, c)), shape=(len(self.rows), self.n)).tocsr()
        return a, np.array([lo for *_, lo, _ in self.rows]), np.array([hi for *_, hi in self.rows])
