"""Prefix-executability metrics over one block of rollouts (docs/definitions.md#pec to
docs/definitions.md#identities).

Every function takes per-rollout arrays: ``fed`` (First Error Depth, integers in
``1..T+1``), ``T`` (scored horizon, integers ``>= 1``) and, where needed, ``Y``
(final success as floats ``1.0``/``0.0``, ``NaN`` = unknown).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

REL_TOL = 1e-12


def _as_int_array(values: npt.ArrayLike, name: str) -> IntArray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def _horizons(T: npt.ArrayLike) -> IntArray:
    t_a = _as_int_array(T, "T")
    if t_a.size == 0:
        raise ValueError("a block needs at least one rollout (got N = 0)")
    bad = np.flatnonzero(t_a < 1)
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"T must be >= 1: rollout {i} has T = {int(t_a[i])}")
    return t_a


def validate_outcomes(Y: npt.ArrayLike) -> FloatArray:
    """``Y`` as floats; raise ValueError unless every value is 0, 1 or NaN (unknown)."""
    y_a = np.asarray(Y, dtype=np.float64)
    if y_a.ndim != 1:
        raise ValueError(f"Y must be one-dimensional, got shape {y_a.shape}")
    bad = np.flatnonzero(~(np.isnan(y_a) | (y_a == 0.0) | (y_a == 1.0)))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"Y must be 0, 1 or NaN (unknown): rollout {i} has Y = {y_a[i]!r}")
    return y_a


def validate_block(
    fed: npt.ArrayLike, T: npt.ArrayLike, Y: npt.ArrayLike | None = None
) -> tuple[IntArray, IntArray, FloatArray | None]:
    """Return ``(fed, T, Y)`` as checked arrays; raise ValueError on invalid input."""
    fed_a = _as_int_array(fed, "FED")
    t_a = _as_int_array(T, "T")
    if fed_a.shape != t_a.shape:
        raise ValueError(f"FED and T lengths differ: {fed_a.size} vs {t_a.size}")
    t_a = _horizons(t_a)
    bad = np.flatnonzero((fed_a < 1) | (fed_a > t_a + 1))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"FED must lie in [1, T+1]: rollout {i} has FED = {int(fed_a[i])}, T = {int(t_a[i])}"
        )
    if Y is None:
        return fed_a, t_a, None
    y_a = validate_outcomes(Y)
    if y_a.shape != fed_a.shape:
        raise ValueError(f"Y and FED lengths differ: {y_a.size} vs {fed_a.size}")
    return fed_a, t_a, y_a


def _depths(k_max: int) -> IntArray:
    if k_max < 1:
        raise ValueError(f"k_max must be >= 1, got {k_max}")
    return np.arange(1, k_max + 1, dtype=np.int64)


def pec(fed: npt.ArrayLike, T: npt.ArrayLike, k_max: int) -> FloatArray:
    """Fixed-cohort PEC(k) = mean 1{FED > k} for k = 1..k_max (denominator always N)."""
    fed_a, _, _ = validate_block(fed, T)
    return (fed_a[:, None] > _depths(k_max)[None, :]).mean(axis=0)


def depth_counts(T: npt.ArrayLike, k_max: int) -> IntArray:
    """#{T >= k} for k = 1..k_max."""
    t_a = _horizons(T)
    return (t_a[:, None] >= _depths(k_max)[None, :]).sum(axis=0)


def depth_support(T: npt.ArrayLike, k_max: int) -> FloatArray:
    """Depth support P(T >= k) for k = 1..k_max."""
    t_a = _horizons(T)
    return depth_counts(t_a, k_max) / t_a.size


def eligible_pec(fed: npt.ArrayLike, T: npt.ArrayLike, k_max: int) -> FloatArray:
    """Eligible-depth PEC P(FED > k | T >= k); NaN where no rollout reaches depth k."""
    fed_a, t_a, _ = validate_block(fed, T)
    ks = _depths(k_max)
    num = (fed_a[:, None] > ks[None, :]).sum(axis=0)
    den = depth_counts(t_a, k_max)
    out = np.full(ks.size, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def ter(fed: npt.ArrayLike, T: npt.ArrayLike) -> float:
    """Trajectory executability rate: mean 1{FED = T + 1}."""
    fed_a, t_a, _ = validate_block(fed, T)
    return float(np.mean(fed_a == t_a + 1))


def auc_pec(fed: npt.ArrayLike, T: npt.ArrayLike) -> float:
    """Per-rollout normalised area: mean (FED - 1) / T."""
    fed_a, t_a, _ = validate_block(fed, T)
    return float(np.mean((fed_a - 1) / t_a))


def mean_fed(fed: npt.ArrayLike, T: npt.ArrayLike) -> float:
    """Mean First Error Depth."""
    fed_a, _, _ = validate_block(fed, T)
    return float(np.mean(fed_a))


def final_success(Y: npt.ArrayLike) -> tuple[float, int]:
    """Return ``(mean Y over known Y, n_known)``; the mean is NaN when no Y is known."""
    y_a = validate_outcomes(Y)
    known = ~np.isnan(y_a)
    n_known = int(known.sum())
    if n_known == 0:
        return math.nan, 0
    return float(y_a[known].mean()), n_known


def recovery(fed: npt.ArrayLike, T: npt.ArrayLike, Y: npt.ArrayLike) -> tuple[int, int]:
    """Return ``(s, n)``: n = #{FED <= T, Y known}, s = successes among them."""
    fed_a, t_a, y_a = validate_block(fed, T, Y)
    assert y_a is not None
    eligible = (fed_a <= t_a) & ~np.isnan(y_a)
    return int((y_a[eligible] == 1.0).sum()), int(eligible.sum())


@dataclass(frozen=True)
class BlockMetrics:
    """All point estimates of one block. Per-depth tuples are indexed by k - 1."""

    n: int
    pec: tuple[float, ...]
    depth_support: tuple[float, ...]
    eligible_pec: tuple[float, ...]
    n_at_depth: tuple[int, ...]
    ter: float
    auc_pec: float
    mean_fed: float
    final_success: float
    n_known: int
    n_prefix_failure: int
    rr_successes: int
    rr_n: int

    @property
    def k_max(self) -> int:
        return len(self.pec)

    @property
    def rr(self) -> float | None:
        """Recovery rate s/n, or None (undefined, never 0) when nothing is eligible."""
        return self.rr_successes / self.rr_n if self.rr_n else None


def block_metrics(
    fed: npt.ArrayLike, T: npt.ArrayLike, Y: npt.ArrayLike, k_max: int
) -> BlockMetrics:
    """Compute every point metric of one block."""
    fed_a, t_a, y_a = validate_block(fed, T, Y)
    assert y_a is not None
    fs, n_known = final_success(y_a)
    s, n = recovery(fed_a, t_a, y_a)
    return BlockMetrics(
        n=int(fed_a.size),
        pec=tuple(pec(fed_a, t_a, k_max).tolist()),
        depth_support=tuple(depth_support(t_a, k_max).tolist()),
        eligible_pec=tuple(eligible_pec(fed_a, t_a, k_max).tolist()),
        n_at_depth=tuple(depth_counts(t_a, k_max).tolist()),
        ter=ter(fed_a, t_a),
        auc_pec=auc_pec(fed_a, t_a),
        mean_fed=mean_fed(fed_a, t_a),
        final_success=fs,
        n_known=n_known,
        n_prefix_failure=int((fed_a <= t_a).sum()),
        rr_successes=s,
        rr_n=n,
    )


def _tol(*values: float) -> float:
    return REL_TOL * max(1.0, *(abs(v) for v in values))


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _tol(a, b)


def _le(a: float, b: float) -> bool:
    return a <= b + _tol(a, b)


def check_identities(
    fed: npt.ArrayLike, T: npt.ArrayLike, Y: npt.ArrayLike, m: BlockMetrics
) -> list[str]:
    """Return human-readable violations of Propositions 1-3 (empty list = all hold).

    Unknown Y: the eligibility count identity is checked twice, on the whole
    cohort (``n_prefix_failure = N(1 - TER)``) and on the known-Y subset
    (``rr_n = n_known(1 - TER_known)``), because RR and final success are
    estimated on known-Y rollouts only. The success decomposition uses q, s and
    r of that known-Y subset; a term whose weight (q or 1 - q) is zero is
    skipped, since its conditional rate is undefined (Prop. 3).
    """
    fed_a, t_a, y_a = validate_block(fed, T, Y)
    assert y_a is not None
    out: list[str] = []
    if m.n != fed_a.size:
        out.append(f"N = {m.n} but the block has {fed_a.size} rollouts")
    out += _curve_violations(m)

    if not _close(m.n_prefix_failure, m.n * (1.0 - m.ter)):
        out.append(f"n_RR-eligible = {m.n_prefix_failure} != N(1 - TER) = {m.n * (1.0 - m.ter)!r}")
    known = ~np.isnan(y_a)
    full = fed_a == t_a + 1
    q_known = float(full[known].mean()) if m.n_known else 0.0
    if not _close(m.rr_n, m.n_known * (1.0 - q_known)):
        out.append(
            f"RR denominator = {m.rr_n} != n_known(1 - TER_known) = {m.n_known * (1.0 - q_known)!r}"
        )

    mean_t1 = float(np.mean(t_a + 1))
    if not (_le(1.0, m.mean_fed) and _le(m.mean_fed, mean_t1)):
        out.append(
            f"1 <= mean FED <= mean(T + 1) violated: mean FED = {m.mean_fed!r}, mean(T + 1) = {mean_t1!r}"
        )

    out += _depth_violations(m)
    out += _horizon_violations(m, t_a)
    out += _success_violations(m, y_a, known & full, q_known)
    return out


def _curve_violations(m: BlockMetrics) -> list[str]:
    """PEC within [0, 1] and non-increasing in k; 0 <= TER <= AUC-PEC <= 1."""
    out: list[str] = []
    for k, p in enumerate(m.pec, start=1):
        if not (_le(0.0, p) and _le(p, 1.0)):
            out.append(f"PEC({k}) = {p!r} outside [0, 1]")
    for k in range(1, m.k_max):
        if not _le(m.pec[k], m.pec[k - 1]):
            out.append(
                f"PEC not non-increasing: PEC({k}) = {m.pec[k - 1]!r} < PEC({k + 1}) = {m.pec[k]!r}"
            )

    if not (_le(0.0, m.ter) and _le(m.ter, m.auc_pec) and _le(m.auc_pec, 1.0)):
        out.append(f"0 <= TER <= AUC-PEC <= 1 violated: TER = {m.ter!r}, AUC-PEC = {m.auc_pec!r}")
    return out


def _depth_violations(m: BlockMetrics) -> list[str]:
    """PEC(k) = depth support x eligible PEC at each depth (0 and NaN where no rollout reaches it)."""
    out: list[str] = []
    for k, (p, ds, ep) in enumerate(zip(m.pec, m.depth_support, m.eligible_pec, strict=True), start=1):
        if ds == 0.0:
            if p != 0.0 or not math.isnan(ep):
                out.append(f"depth {k} has no support but PEC = {p!r}, eligible PEC = {ep!r}")
        elif not _close(p, ds * ep):
            out.append(f"PEC({k}) = {p!r} != depth_support x eligible_pec = {ds * ep!r}")
    return out


def _horizon_violations(m: BlockMetrics, t_a: IntArray) -> list[str]:
    """Under a common horizon T0: TER = PEC(T0) and AUC-PEC = (mean FED - 1)/T0."""
    out: list[str] = []
    t0 = int(t_a[0])
    if np.all(t_a == t0):
        if t0 <= m.k_max and not _close(m.ter, m.pec[t0 - 1]):
            out.append(f"common horizon T0 = {t0}: TER = {m.ter!r} != PEC(T0) = {m.pec[t0 - 1]!r}")
        if not _close(m.auc_pec, (m.mean_fed - 1.0) / t0):
            out.append(f"common horizon T0 = {t0}: AUC-PEC = {m.auc_pec!r} != (mean FED - 1)/T0")
    return out


def _success_violations(m: BlockMetrics, y_a: FloatArray, known_full: npt.NDArray[np.bool_],
                        q_known: float) -> list[str]:
    """P(Y=1) = q*s + (1-q)*r over the known-Y rollouts (``known_full``: those fully executable)."""
    out: list[str] = []
    if m.n_known:
        total = 0.0
        if q_known > 0.0:
            total += q_known * float(y_a[known_full].mean())
        if q_known < 1.0:
            if m.rr is None:
                out.append("RR undefined although known-Y rollouts with a prefix failure exist")
            else:
                total += (1.0 - q_known) * m.rr
        if not _close(m.final_success, total):
            out.append(f"P(Y=1) = {m.final_success!r} != q*s + (1-q)*r = {total!r}")
    elif not math.isnan(m.final_success):
        out.append(f"final success = {m.final_success!r} although no Y is known")
    return out
