"""Loaders for the real benchmark datasets in ``../shared/data`` (never copied into the repo).

>>> from sgmc import datasets
>>> ds = datasets.load("concrete")                                      # doctest: +SKIP
>>> ds.X.shape, ds.y.shape, ds.task                                     # doctest: +SKIP
((1030, 8), (1030,), 'regression')
>>> sp = datasets.split(ds.X, ds.y, fractions=(0.7, 0.1, 0.2), seed=0)  # doctest: +SKIP
>>> X_train, y_train = sp.train                                         # doctest: +SKIP

Where the data are looked for (:func:`data_root`): an explicit ``root=...``, else the
``SGMC_DATA`` environment variable, else ``../shared/data`` relative to the working directory,
else ``../shared/data`` relative to the repository root. Each loader reads the raw file as
staged (see the folder's SOURCE.txt) and returns a :class:`Dataset`:

* ``X``: float64 ``(N, d)`` features, unscaled (scale with :func:`split`, on the training part);
* ``y``: float64 ``(N,)`` for regression, float64 in {0., 1.} for binary tasks, int64 in
  {0, ..., K-1} for multiclass tasks.

Datasets (name: file; target; columns dropped from the features):

* ``concrete``: uci_regression/concrete/data/data.txt; compressive strength (the column in
  index_target.txt, the last one); features from index_features.txt. 1030 × 8.
* ``airfoil``: airfoil/airfoil_self_noise.dat; scaled sound pressure (last column). 1503 × 5.
* ``parkinsons``: parkinsons_telemonitoring/parkinsons_updrs.data; ``total_UPDRS``; drops
  ``subject#`` (an identifier) and both UPDRS columns (``motor_UPDRS`` is near-collinear with
  the target and is itself a target). 5875 × 19 (age, sex, test_time, 16 voice measures).
* ``bike``: bike_sharing/hour.csv; ``cnt``; the 12 features season..windspeed; drops
  ``instant`` (row id), ``dteday`` (a date string) and ``casual``/``registered`` (they sum to
  ``cnt``). 17379 × 12.
* ``pima``: pima/pima-indians-diabetes.data.csv; diabetes label (last column). 768 × 8; zeros
  that stand for missing measurements are kept as they are.
* ``diabetic_retinopathy``: diabetic_retinopathy_debrecen/messidor_features.arff; class (last
  column). 1151 × 19.
* ``eeg``: eeg_eye_state/EEG Eye State.arff; ``eyeDetection`` (last column). 14980 × 14.
* ``protein``: uci_regression/protein-tertiary-structure/data/data.txt; RMSD (index_target.txt,
  the last column). 45730 × 9.
* ``letter``: letter/letter-recognition.data; ``ord(letter) - ord("A")``, 26 classes.
  20000 × 16.
* ``mnist``: mnist/mnist.npz; the 60000 official training images flattened to 784 pixels scaled
  to [0, 1]; :func:`load_mnist` also returns the official 10000-image test set.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sgmc._datafiles import SPECS, binary_labels, mnist_part

__all__ = ["NAMES", "Dataset", "Split", "available", "data_root", "load", "load_mnist", "split"]

NAMES: tuple[str, ...] = ("concrete", "airfoil", "parkinsons", "bike", "pima",
                          "diabetic_retinopathy", "eeg", "protein", "letter", "mnist")

_ENV = "SGMC_DATA"
_TASKS = ("regression", "binary", "multiclass")


@dataclass(frozen=True, eq=False, repr=False)
class Dataset:
    """A loaded dataset.

    Attributes:
        name: one of :data:`NAMES`.
        X: float64 features, shape ``(N, d)``.
        y: targets, shape ``(N,)``: float64 for ``"regression"``, float64 in {0., 1.} for
            ``"binary"``, int64 in {0, ..., num_classes - 1} for ``"multiclass"``.
        task: ``"regression"``, ``"binary"`` or ``"multiclass"``.
        path: the file that was read.
        num_classes: K for classification tasks (2 for binary), None for regression.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    task: str
    path: str
    num_classes: int | None = None

    def __repr__(self) -> str:
        k = "" if self.num_classes is None else f", num_classes={self.num_classes}"
        return (f"Dataset(name={self.name!r}, X={self.X.dtype}{self.X.shape}, "
                f"y={self.y.dtype}{self.y.shape}, task={self.task!r}{k}, path={self.path!r})")


@dataclass(frozen=True, eq=False)
class Split:
    """A train/validation/test split with features standardised on the training part.

    Attributes:
        train, val, test: ``(X, y)`` pairs; ``X`` is ``(X_raw - x_mean) / x_std``, ``y`` is
            ``(y_raw - y_mean) / y_std`` (the identity when targets are not standardised).
        x_mean, x_std: per-feature mean and standard deviation of the training features
            (the standard deviation of a constant column is reported as 1.0).
        y_mean, y_std: training-target mean and standard deviation when targets were
            standardised, else 0.0 and 1.0. Predictions map back as ``y * y_std + y_mean``.
    """

    train: tuple[np.ndarray, np.ndarray]
    val: tuple[np.ndarray, np.ndarray]
    test: tuple[np.ndarray, np.ndarray]
    x_mean: np.ndarray
    x_std: np.ndarray
    y_mean: float
    y_std: float


# --------------------------------------------------------------------------- locating files


def _root_candidates(root: str | os.PathLike[str] | None) -> list[pathlib.Path]:
    """The data folders to look in, in order (an explicit choice is the only candidate)."""
    if root is not None:
        return [pathlib.Path(root).expanduser().resolve()]
    env = os.environ.get(_ENV)
    if env:
        return [pathlib.Path(env).expanduser().resolve()]
    cwd = (pathlib.Path.cwd() / ".." / "shared" / "data").resolve()
    repo = (pathlib.Path(__file__).resolve().parents[2] / ".." / "shared" / "data").resolve()
    return [cwd] if repo == cwd else [cwd, repo]


def data_root(root: str | os.PathLike[str] | None = None) -> pathlib.Path:
    """The folder holding the datasets.

    Resolution order: the explicit ``root``; the ``SGMC_DATA`` environment variable;
    ``../shared/data`` relative to the current working directory; ``../shared/data`` relative
    to the repository root. An explicit ``root`` (or ``SGMC_DATA``) is used as given, even when
    it does not exist, so that a mistyped path is reported by :func:`load` instead of
    silently replaced by another copy of the data. Otherwise the first default folder that
    exists is returned, or the first default candidate when none exists.
    """
    candidates = _root_candidates(root)
    for cand in candidates:
        if cand.is_dir():
            return cand
    return candidates[0]


def _missing(name: str, rel: str, root: str | os.PathLike[str] | None) -> FileNotFoundError:
    """A FileNotFoundError that says what was tried and how to point at the data."""
    tried = [str(c / rel) for c in _root_candidates(root)]
    if root is not None:
        how = "the folder given as root=..."
    elif os.environ.get(_ENV):
        how = f"the {_ENV} environment variable"
    else:
        how = "the default ../shared/data locations"
    return FileNotFoundError(
        f"dataset {name!r}: file not found; tried {', '.join(tried)} (from {how}). "
        f"Pass root=... (the folder holding the dataset folders) or set "
        f"{_ENV}=/path/to/data.")


# --------------------------------------------------------------------------- reading a dataset
# The file formats and per-dataset readers (name -> file, reader, task, classes): sgmc._datafiles.

assert tuple(SPECS) == NAMES


def _check_name(name: str) -> None:
    if name not in SPECS:
        raise ValueError(f"unknown dataset {name!r}; expected one of {', '.join(NAMES)}")


def _path(name: str, root: str | os.PathLike[str] | None) -> pathlib.Path:
    """The file of dataset ``name`` under the data root (raises when it does not exist)."""
    rel = SPECS[name][0]
    path = data_root(root) / rel
    if not path.is_file():
        raise _missing(name, rel, root)
    return path


def _make(name: str, X: np.ndarray, y: np.ndarray, path: pathlib.Path) -> Dataset:
    """Validate the arrays and cast them to the documented dtypes."""
    task, num_classes = SPECS[name][2], SPECS[name][3]
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise ValueError(f"{path}: parsed features {X.shape} and targets {y.shape} do not match")
    if task == "regression":
        y = np.ascontiguousarray(y, dtype=np.float64)
    elif task == "binary":
        y = binary_labels(y, path)
    else:
        y = np.ascontiguousarray(y, dtype=np.int64)
        assert num_classes is not None
        if y.min() < 0 or y.max() >= num_classes:
            raise ValueError(f"{path}: class labels outside 0..{num_classes - 1}")
    return Dataset(name=name, X=X, y=y, task=task, path=str(path), num_classes=num_classes)


# --------------------------------------------------------------------------- public API


def load(name: str, root: str | os.PathLike[str] | None = None) -> Dataset:
    """Load dataset ``name`` (one of :data:`NAMES`) from the data folder (see :func:`data_root`).

    Raises:
        ValueError: for an unknown name.
        FileNotFoundError: when the file is missing; the message gives the path(s) tried.
    """
    _check_name(name)
    path = _path(name, root)
    X, y = SPECS[name][1](path)
    return _make(name, X, y, path)


def load_mnist(root: str | os.PathLike[str] | None = None) -> tuple[Dataset, Dataset]:
    """MNIST as ``(train, test)``: the official 60000/10000 split, pixels scaled to [0, 1]."""
    path = _path("mnist", root)
    train = _make("mnist", *mnist_part(path, "train"), path)
    test = _make("mnist", *mnist_part(path, "test"), path)
    return train, test


def available(root: str | os.PathLike[str] | None = None) -> list[str]:
    """The names in :data:`NAMES` whose files exist under the data folder."""
    base = data_root(root)
    return [name for name in NAMES if (base / SPECS[name][0]).is_file()]


def _is_regression_target(y: np.ndarray) -> bool:
    """True iff ``y`` is floating and not entirely made of 0s and 1s."""
    return bool(np.issubdtype(y.dtype, np.floating) and not np.isin(y, (0.0, 1.0)).all())


def split(X: np.ndarray, y: np.ndarray, fractions: Sequence[float] = (0.7, 0.1, 0.2),
          seed: int = 0, standardize_y: bool | None = None) -> Split:
    """Randomly split ``(X, y)`` into train/val/test and standardise with training statistics.

    Args:
        X: features, shape ``(N, d)``.
        y: targets, shape ``(N,)``.
        fractions: three positive fractions (train, val, test) summing to 1. Split sizes are
            ``round(N * cumulative fraction)`` differences, so they add up to N.
        seed: seed of the permutation (``np.random.default_rng(seed).permutation(N)``).
        standardize_y: standardise targets with the training mean/std. None (default) means
            yes exactly when ``y`` is floating and not all in {0, 1} (i.e. regression).

    Returns:
        A :class:`Split`. Features are always standardised with the training mean and
        standard deviation (1.0 for a constant column); targets keep their dtype unless
        standardised.

    Raises:
        ValueError: for bad ``fractions``, mismatched shapes, or too few rows for a split.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (N, d); got shape {X.shape}")
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have shape ({X.shape[0]},); got {y.shape}")
    try:
        fr = np.asarray(fractions, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"fractions must be three numbers; got {fractions!r}") from err
    if fr.shape != (3,) or not np.all(np.isfinite(fr)) or np.any(fr <= 0) \
            or abs(fr.sum() - 1.0) > 1e-8:
        raise ValueError("fractions must be three positive numbers (train, val, test) summing "
                         f"to 1; got {fractions!r}")
    n = X.shape[0]
    cuts = np.round(np.cumsum(fr)[:2] * n).astype(np.int64)
    sizes = np.diff(np.concatenate([[0], cuts, [n]]))
    if np.any(sizes < 1):
        raise ValueError(f"{n} rows are too few for fractions {tuple(fractions)!r}: split sizes "
                         f"would be {sizes.tolist()}")
    perm = np.random.default_rng(seed).permutation(n)
    idx_train, idx_val, idx_test = np.split(perm, cuts)

    X_train = X[idx_train]
    x_mean = X_train.mean(axis=0)
    x_std = X_train.std(axis=0)
    x_std[(np.ptp(X_train, axis=0) == 0) | (x_std == 0)] = 1.0

    if standardize_y is None:
        standardize_y = _is_regression_target(y)
    if standardize_y:
        y = y.astype(np.float64)
        y_mean = float(y[idx_train].mean())
        y_std = float(y[idx_train].std())
        if np.ptp(y[idx_train]) == 0 or y_std == 0:
            y_std = 1.0
    else:
        y_mean, y_std = 0.0, 1.0

    def part(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        xs = (X[idx] - x_mean) / x_std
        ys = (y[idx] - y_mean) / y_std if standardize_y else y[idx].copy()
        return xs, ys

    return Split(train=part(idx_train), val=part(idx_val), test=part(idx_test),
                 x_mean=x_mean, x_std=x_std, y_mean=y_mean, y_std=y_std)
