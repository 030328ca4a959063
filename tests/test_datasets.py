"""sgmc.datasets: parsers on small synthetic files, split(), and the real ../shared/data files."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from sgmc import datasets

# --------------------------------------------------------------------------- synthetic layouts


def _write(root: pathlib.Path, rel: str, text: str, newline: str = "\n") -> pathlib.Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline=newline) as f:
        f.write(text)
    return path


@pytest.fixture
def root(tmp_path: pathlib.Path) -> pathlib.Path:
    """A tmp data folder mimicking ../shared/data with tiny versions of the files."""
    # concrete: whitespace with trailing tabs and a blank last line, index files present;
    # the target column (2) is deliberately not the last one and column 3 is unused.
    _write(tmp_path, "uci_regression/concrete/data/data.txt",
           "1.0 \t10.0 \t100.0 \t-1 \n2.0 \t20.0 \t200.0 \t-2 \n3.5 \t30.0 \t300.0 \t-3 \n\n")
    _write(tmp_path, "uci_regression/concrete/data/index_features.txt", "0\n1\n")
    _write(tmp_path, "uci_regression/concrete/data/index_target.txt", "2\n")
    # protein: no index files -> last column is the target.
    _write(tmp_path, "uci_regression/protein-tertiary-structure/data/data.txt",
           "1 2 3 4.5\n5 6 7 8.5\n")
    _write(tmp_path, "airfoil/airfoil_self_noise.dat", "800\t0\t0.3\t71.3\t0.002\t126.2\n"
           "1000\t0\t0.3\t71.3\t0.002\t125.2\n")
    _write(tmp_path, "parkinsons_telemonitoring/parkinsons_updrs.data",
           "subject#,age,sex,test_time,motor_UPDRS,total_UPDRS," + ",".join(
               f"v{i}" for i in range(16)) + "\n"
           + "1,72,0,5.6,28.2,34.4," + ",".join(["0.5"] * 16) + "\n"
           + "2,60,1,1e-1,20.0,25.0," + ",".join(["3.4e-005"] * 16))  # no final newline
    _write(tmp_path, "bike_sharing/hour.csv",
           "instant,dteday,season,yr,mnth,hr,holiday,weekday,workingday,weathersit,temp,atemp,"
           "hum,windspeed,casual,registered,cnt\n"
           "1,2011-01-01,1,0,1,0,0,6,0,1,0.24,0.2879,0.81,0,3,13,16\n"
           "2,2011-01-01,1,0,1,1,0,6,0,1,0.22,0.2727,0.8,0,8,32,40\n")
    _write(tmp_path, "pima/pima-indians-diabetes.data.csv",
           "6,148,72,35,0,33.6,0.627,50,1\n1,85,66,29,0,26.6,0.351,31,0")
    # ARFF with comments, blank lines, CRLF line ends and upper-case keywords.
    _write(tmp_path, "eeg_eye_state/EEG Eye State.arff",
           "% EEG test file\n@RELATION EEG_DATA\n\n@ATTRIBUTE AF3 NUMERIC\n"
           "@ATTRIBUTE F7 NUMERIC\n% a comment between attributes\n"
           "@ATTRIBUTE eyeDetection {0,1}\n\n@DATA\n% a comment in the data\n"
           "4329.23,4009.23,0\n\n4324.62,4004.62,1\n4327.69,4006.67,0\n", newline="\r\n")
    _write(tmp_path, "diabetic_retinopathy_debrecen/messidor_features.arff",
           "@relation dr\n\n@attribute 0 numeric\n@attribute 1 numeric\n@attribute 2 numeric\n"
           "\n@data\n1,1,0\n0,0.5,1")
    _write(tmp_path, "letter/letter-recognition.data", "T,2,8,3\nA,5,12,3\nZ,4,11,6\n")
    mnist = tmp_path / "mnist" / "mnist.npz"
    mnist.parent.mkdir()
    np.savez(mnist, x_train=np.full((3, 28, 28), 255, np.uint8),
             y_train=np.array([0, 9, 3], np.uint8), x_test=np.zeros((2, 28, 28), np.uint8),
             y_test=np.array([1, 2], np.uint8))
    return tmp_path


def test_uci_regression_uses_index_files(root):
    ds = datasets.load("concrete", root=root)
    assert ds.task == "regression" and ds.num_classes is None
    assert ds.path == str(root / "uci_regression/concrete/data/data.txt")
    np.testing.assert_array_equal(ds.X, [[1, 10], [2, 20], [3.5, 30]])
    np.testing.assert_array_equal(ds.y, [100, 200, 300])
    assert ds.X.dtype == ds.y.dtype == np.float64


def test_uci_regression_without_index_files_uses_last_column(root):
    ds = datasets.load("protein", root=root)
    np.testing.assert_array_equal(ds.X, [[1, 2, 3], [5, 6, 7]])
    np.testing.assert_array_equal(ds.y, [4.5, 8.5])


def test_whitespace_and_csv_loaders(root):
    air = datasets.load("airfoil", root=root)
    assert air.X.shape == (2, 5)
    np.testing.assert_array_equal(air.y, [126.2, 125.2])

    park = datasets.load("parkinsons", root=root)
    assert park.X.shape == (2, 19)  # age, sex, test_time + 16 voice measures
    np.testing.assert_array_equal(park.X[:, :3], [[72, 0, 5.6], [60, 1, 0.1]])
    np.testing.assert_array_equal(park.y, [34.4, 25.0])  # total_UPDRS
    np.testing.assert_allclose(park.X[1, 3:], 3.4e-5)

    bike = datasets.load("bike", root=root)
    np.testing.assert_array_equal(bike.X[0], [1, 0, 1, 0, 0, 6, 0, 1, 0.24, 0.2879, 0.81, 0])
    np.testing.assert_array_equal(bike.y, [16, 40])  # cnt; casual/registered dropped


def test_binary_loaders(root):
    pima = datasets.load("pima", root=root)
    assert pima.X.shape == (2, 8) and pima.task == "binary" and pima.num_classes == 2
    np.testing.assert_array_equal(pima.y, [1.0, 0.0])
    assert pima.y.dtype == np.float64

    eeg = datasets.load("eeg", root=root)
    np.testing.assert_array_equal(eeg.X, [[4329.23, 4009.23], [4324.62, 4004.62],
                                          [4327.69, 4006.67]])
    np.testing.assert_array_equal(eeg.y, [0, 1, 0])

    dr = datasets.load("diabetic_retinopathy", root=root)
    np.testing.assert_array_equal(dr.X, [[1, 1], [0, 0.5]])
    np.testing.assert_array_equal(dr.y, [0, 1])


def test_binary_labels_outside_01_are_rejected(root):
    _write(root, "pima/pima-indians-diabetes.data.csv", "6,148,72,35,0,33.6,0.627,50,2\n")
    with pytest.raises(ValueError, match="0 or 1"):
        datasets.load("pima", root=root)


def test_arff_errors(root):
    rel = "eeg_eye_state/EEG Eye State.arff"
    _write(root, rel, "@relation r\n@attribute a numeric\n@attribute b numeric\n")
    with pytest.raises(ValueError, match="@data"):
        datasets.load("eeg", root=root)
    _write(root, rel, "@relation r\n@attribute a numeric\n@attribute b numeric\n@data\n1,2,3\n")
    with pytest.raises(ValueError, match="expected 2"):
        datasets.load("eeg", root=root)


def test_multiclass_loaders(root):
    letter = datasets.load("letter", root=root)
    assert letter.task == "multiclass" and letter.num_classes == 26
    np.testing.assert_array_equal(letter.y, [19, 0, 25])
    assert letter.y.dtype == np.int64
    np.testing.assert_array_equal(letter.X, [[2, 8, 3], [5, 12, 3], [4, 11, 6]])

    train = datasets.load("mnist", root=root)
    assert train.X.shape == (3, 784) and train.X.dtype == np.float64
    np.testing.assert_array_equal(train.X, 1.0)
    np.testing.assert_array_equal(train.y, [0, 9, 3])
    assert train.y.dtype == np.int64
    tr, te = datasets.load_mnist(root=root)
    np.testing.assert_array_equal(tr.y, train.y)
    assert te.X.shape == (2, 784) and te.num_classes == 10
    np.testing.assert_array_equal(te.y, [1, 2])


def test_available_lists_present_files(root):
    assert datasets.available(root) == list(datasets.NAMES)
    (root / "letter/letter-recognition.data").unlink()
    assert "letter" not in datasets.available(root)
    assert datasets.available(root / "nowhere") == []


def test_dataset_repr_is_short(root):
    text = repr(datasets.load("letter", root=root))
    assert "(3, 3)" in text and "num_classes=26" in text and len(text) < 300


# --------------------------------------------------------------------------- names and paths


def test_unknown_name_lists_names():
    with pytest.raises(ValueError, match="unknown dataset 'covertype'") as info:
        datasets.load("covertype")
    for name in datasets.NAMES:
        assert name in str(info.value)


def test_missing_file_message_names_path_and_how_to_fix(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        datasets.load("concrete", root=tmp_path)
    msg = str(info.value)
    assert str(tmp_path / "uci_regression/concrete/data/data.txt") in msg
    assert "SGMC_DATA" in msg and "root=" in msg
    with pytest.raises(FileNotFoundError, match="mnist"):
        datasets.load_mnist(root=tmp_path)


def test_missing_default_location_lists_candidates(tmp_path, monkeypatch):
    monkeypatch.delenv("SGMC_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    fake_repo_root = tmp_path / "repo" / "src" / "sgmc" / "datasets.py"
    monkeypatch.setattr(datasets, "__file__", str(fake_repo_root))
    with pytest.raises(FileNotFoundError) as info:
        datasets.load("airfoil")
    msg = str(info.value)
    assert str((tmp_path / ".." / "shared/data/airfoil").resolve()) in msg
    assert str(tmp_path / "shared/data/airfoil") in msg
    assert "SGMC_DATA" in msg


def test_data_root_resolution_order(tmp_path, monkeypatch):
    monkeypatch.delenv("SGMC_DATA", raising=False)
    explicit, env = tmp_path / "explicit", tmp_path / "env"
    explicit.mkdir()
    env.mkdir()
    cwd = tmp_path / "work" / "main"
    shared = tmp_path / "work" / "shared" / "data"
    cwd.mkdir(parents=True)
    shared.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(datasets, "__file__", str(tmp_path / "elsewhere/src/sgmc/datasets.py"))
    assert datasets.data_root() == shared.resolve()  # ../shared/data from the cwd
    monkeypatch.setenv("SGMC_DATA", str(env))
    assert datasets.data_root() == env.resolve()
    assert datasets.data_root(explicit) == explicit.resolve()
    assert datasets.data_root(str(explicit)) == explicit.resolve()
    # an explicit (or env) path is kept even if missing, so load() reports it
    assert datasets.data_root(tmp_path / "typo") == (tmp_path / "typo").resolve()
    monkeypatch.setenv("SGMC_DATA", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="missing"):
        datasets.load("pima")
    # repository-relative fallback when the cwd has no ../shared/data
    monkeypatch.delenv("SGMC_DATA")
    monkeypatch.chdir(explicit)  # tmp_path/shared/data does not exist
    assert not (tmp_path / "shared" / "data").exists()
    repo = tmp_path / "a" / "repo"
    monkeypatch.setattr(datasets, "__file__", str(repo / "src/sgmc/datasets.py"))
    assert datasets.data_root() == (tmp_path / "shared/data").resolve()  # nothing exists yet
    (tmp_path / "a" / "shared" / "data").mkdir(parents=True)
    assert datasets.data_root() == (tmp_path / "a" / "shared" / "data").resolve()


def test_env_var_is_used_by_load(root, monkeypatch):
    monkeypatch.setenv("SGMC_DATA", str(root))
    assert datasets.load("airfoil").X.shape == (2, 5)


# --------------------------------------------------------------------------- split()


def _toy(n: int = 50, d: int = 3, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.arange(n, dtype=float), rng.normal(5.0, 3.0, (n, d - 1))])
    y = 2.0 + 10.0 * rng.normal(size=n)
    return X, y


def _row_ids(sp: datasets.Split, part: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Undo the standardisation of column 0 (which holds the row number)."""
    return np.rint(part[0][:, 0] * sp.x_std[0] + sp.x_mean[0]).astype(int)


def test_split_sizes_and_disjoint_cover():
    X, y = _toy(50)
    sp = datasets.split(X, y, fractions=(0.7, 0.1, 0.2), seed=3)
    assert [len(p[0]) for p in (sp.train, sp.val, sp.test)] == [35, 5, 10]
    assert [len(p[1]) for p in (sp.train, sp.val, sp.test)] == [35, 5, 10]
    ids = [_row_ids(sp, p) for p in (sp.train, sp.val, sp.test)]
    allids = np.concatenate(ids)
    assert len(np.unique(allids)) == 50 and set(allids) == set(range(50))
    # the targets travel with their rows
    for p, i in zip((sp.train, sp.val, sp.test), ids, strict=True):
        np.testing.assert_allclose(p[1] * sp.y_std + sp.y_mean, y[i])
    # sizes always add up, also when N * fraction is not an integer
    sp = datasets.split(*_toy(7), fractions=(0.5, 0.25, 0.25))
    assert sum(len(p[0]) for p in (sp.train, sp.val, sp.test)) == 7


def test_split_is_deterministic_per_seed():
    X, y = _toy()
    a, b = datasets.split(X, y, seed=5), datasets.split(X, y, seed=5)
    c = datasets.split(X, y, seed=6)
    for pa, pb in zip((a.train, a.val, a.test), (b.train, b.val, b.test), strict=True):
        np.testing.assert_array_equal(pa[0], pb[0])
        np.testing.assert_array_equal(pa[1], pb[1])
    assert not np.array_equal(_row_ids(a, a.train), _row_ids(c, c.train))
    expected = np.random.default_rng(5).permutation(len(y))[:35]
    np.testing.assert_array_equal(_row_ids(a, a.train), expected)


def test_split_standardises_with_training_statistics_only():
    X, y = _toy(200)
    X[:, 2] = 4.0  # a constant column
    sp = datasets.split(X, y, seed=0)
    Xtr, Xte = sp.train[0], sp.test[0]
    np.testing.assert_allclose(Xtr.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Xtr[:, :2].std(0), 1.0)
    assert sp.x_std[2] == 1.0 and np.all(Xtr[:, 2] == 0.0) and np.all(np.isfinite(Xte))
    assert np.all(np.abs(Xte[:, 1:2].mean(0)) > 1e-6)  # test part is not re-centred
    ids = _row_ids(sp, sp.train)
    np.testing.assert_allclose(sp.x_mean, X[ids].mean(0))
    np.testing.assert_allclose(sp.x_std[:2], X[ids, :2].std(0))


def test_split_standardize_y_behaviour():
    X, y = _toy(100)
    sp = datasets.split(X, y)  # regression: on by default
    np.testing.assert_allclose(sp.train[1].mean(), 0.0, atol=1e-12)
    np.testing.assert_allclose(sp.train[1].std(), 1.0)
    ids = _row_ids(sp, sp.train)
    assert sp.y_mean == pytest.approx(y[ids].mean()) and sp.y_std == pytest.approx(y[ids].std())

    off = datasets.split(X, y, standardize_y=False)
    assert (off.y_mean, off.y_std) == (0.0, 1.0)
    np.testing.assert_array_equal(off.train[1], y[_row_ids(off, off.train)])

    labels = (y > 2.0).astype(np.float64)  # binary: off by default, values unchanged
    sb = datasets.split(X, labels)
    assert (sb.y_mean, sb.y_std) == (0.0, 1.0)
    assert set(np.unique(np.concatenate([sb.train[1], sb.test[1]]))) <= {0.0, 1.0}

    classes = np.arange(100) % 7  # multiclass: integer labels keep their dtype
    sm = datasets.split(X, classes)
    assert sm.train[1].dtype == classes.dtype and (sm.y_mean, sm.y_std) == (0.0, 1.0)

    forced = datasets.split(X, labels, standardize_y=True)
    np.testing.assert_allclose(forced.train[1].mean(), 0.0, atol=1e-12)


@pytest.mark.parametrize("fractions", [(0.7, 0.3), (0.8, 0.1, 0.2), (0.7, 0.0, 0.3),
                                       (1.2, -0.1, -0.1), (0.5, 0.5, float("nan")), "abc"])
def test_split_rejects_bad_fractions(fractions):
    X, y = _toy()
    with pytest.raises(ValueError, match="fractions"):
        datasets.split(X, y, fractions=fractions)


def test_split_rejects_bad_shapes_and_tiny_data():
    X, y = _toy(10)
    with pytest.raises(ValueError, match="2-D"):
        datasets.split(X[:, 0], y)
    with pytest.raises(ValueError, match="y must have shape"):
        datasets.split(X, y[:-1])
    with pytest.raises(ValueError, match="too few"):
        datasets.split(X[:2], y[:2])


# --------------------------------------------------------------------------- the real files

# name -> (N, d), from ../shared/data/README.md (parkinsons: 22 columns minus subject# and the
# two UPDRS scores; bike: the 12 features season..windspeed).
SHAPES = {
    "concrete": (1030, 8), "airfoil": (1503, 5), "parkinsons": (5875, 19), "bike": (17379, 12),
    "pima": (768, 8), "diabetic_retinopathy": (1151, 19), "eeg": (14980, 14),
    "protein": (45730, 9), "letter": (20000, 16), "mnist": (60000, 784),
}
TASKS = {"pima": "binary", "diabetic_retinopathy": "binary", "eeg": "binary",
         "letter": "multiclass", "mnist": "multiclass"}


@pytest.fixture(scope="module")
def real_root() -> pathlib.Path:
    root = datasets.data_root()
    if not root.is_dir():
        pytest.skip(f"real data folder {root} is absent (set SGMC_DATA to run these tests)")
    return root


@pytest.fixture(scope="module")
def real_mnist(real_root):
    if "mnist" not in datasets.available(real_root):
        pytest.skip(f"mnist/mnist.npz is absent under {real_root}")
    return datasets.load_mnist(real_root)


def test_real_names_match_readme_table():
    assert set(SHAPES) == set(datasets.NAMES)


@pytest.mark.data
@pytest.mark.parametrize("name", datasets.NAMES)
def test_real_dataset_loads(name, real_root, request):
    if name not in datasets.available(real_root):
        pytest.skip(f"{name}: file absent under {real_root}")
    ds = request.getfixturevalue("real_mnist")[0] if name == "mnist" else datasets.load(
        name, real_root)
    assert ds.name == name and ds.task == TASKS.get(name, "regression")
    assert ds.X.shape == SHAPES[name] and ds.y.shape == (SHAPES[name][0],)
    assert ds.X.dtype == np.float64 and np.all(np.isfinite(ds.X))
    if ds.task == "regression":
        assert ds.y.dtype == np.float64 and np.all(np.isfinite(ds.y)) and ds.y.std() > 0
        assert ds.num_classes is None
    elif ds.task == "binary":
        assert ds.y.dtype == np.float64 and set(np.unique(ds.y)) == {0.0, 1.0}
        assert ds.num_classes == 2
    else:
        assert ds.y.dtype == np.int64
        np.testing.assert_array_equal(np.unique(ds.y), np.arange(ds.num_classes))


@pytest.mark.data
def test_real_known_values(real_root):
    counts = {"pima": 268, "diabetic_retinopathy": 611, "eeg": 6723}  # from SOURCE.txt
    for name, positives in counts.items():
        if name in datasets.available(real_root):
            assert datasets.load(name, real_root).y.sum() == positives
    if "concrete" in datasets.available(real_root):
        ds = datasets.load("concrete", real_root)  # first row of data.txt
        np.testing.assert_array_equal(ds.X[0], [540, 0, 0, 162, 2.5, 1040, 676, 28])
        assert ds.y[0] == 79.99
    if "letter" in datasets.available(real_root):
        assert datasets.load("letter", real_root).y[0] == ord("T") - ord("A")


@pytest.mark.data
def test_real_mnist_test_set(real_mnist):
    train, test = real_mnist
    assert test.X.shape == (10000, 784) and test.y.shape == (10000,)
    assert 0.0 <= test.X.min() and test.X.max() <= 1.0
    assert train.X.mean() * 255 == pytest.approx(33.3184, abs=1e-3)  # SOURCE.txt
    np.testing.assert_array_equal(np.bincount(train.y), [5923, 6742, 5958, 6131, 5842, 5421,
                                                         5918, 6265, 5851, 5949])


@pytest.mark.data
def test_real_split_smoke(real_root):
    if "airfoil" not in datasets.available(real_root):
        pytest.skip("airfoil absent")
    ds = datasets.load("airfoil", real_root)
    sp = datasets.split(ds.X, ds.y, seed=0)
    assert sum(len(p[0]) for p in (sp.train, sp.val, sp.test)) == 1503
    np.testing.assert_allclose(sp.train[0].mean(0), 0.0, atol=1e-10)
