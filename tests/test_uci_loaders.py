"""Loaders of the particle experiments' data (vits_ref.data.uci)."""

import sys

import numpy as np
import pytest

from vits_ref.data import classification_dataset, load_kin8nm, regression_dataset

ROWS = np.arange(36, dtype=float).reshape(4, 9) / 7.0


def write(path, text):
    path.write_text(text)
    return path


def test_kin8nm_csv_with_header_and_whitespace_without(tmp_path):
    header = ",".join([f"theta{i}" for i in range(1, 9)] + ["y"])
    body = "\n".join(",".join(repr(float(v)) for v in r) for r in ROWS)
    X, y = load_kin8nm(write(tmp_path / "k.csv", header + "\n" + body + "\n\n"))
    assert np.array_equal(X, ROWS[:, :8]) and np.array_equal(y, ROWS[:, 8])
    body = "\n".join("  ".join(repr(float(v)) for v in r) for r in ROWS)
    X2, y2 = load_kin8nm(str(write(tmp_path / "Dataset.data", body)))
    assert np.array_equal(X2, X) and np.array_equal(y2, y)


@pytest.mark.parametrize("text, match", [
    ("1,2,3\n", "expected 9 columns"),
    ("1,2,3,4,5,6,7,8,9\n1,2,x,4,5,6,7,8,9\n", "line 2: non-numeric"),
    ("1,2,3,4,5,6,7,8,nan\n", "NaN or inf"),
    ("a,b,c,d,e,f,g,h,i\n", "no data rows"),
    ("", "no data rows"),
])
def test_kin8nm_errors_name_the_path(tmp_path, text, match):
    p = write(tmp_path / "bad.csv", text)
    with pytest.raises(ValueError, match=match) as info:
        load_kin8nm(p)
    assert "bad.csv" in str(info.value)


def test_kin8nm_missing_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothere.csv"):
        load_kin8nm(tmp_path / "nothere.csv")
    with pytest.raises(IsADirectoryError, match="directory"):
        load_kin8nm(tmp_path)


def test_regression_split_and_standardisation(tmp_path):
    rng = np.random.default_rng(0)
    table = rng.standard_normal((100, 9)) * 3 + 5
    table[:, 3] = 2.0  # a constant column keeps scale 1
    p = tmp_path / "kin8nm.csv"
    np.savetxt(p, table, delimiter=",")
    ds = regression_dataset("kin8nm", path=p, seed=4)
    assert ds.X_train.shape == (90, 8) and ds.X_test.shape == (10, 8)
    assert np.allclose(ds.X_train.mean(0), 0, atol=1e-12)
    assert np.allclose(ds.X_train.std(0)[[0, 1, 2, 4]], 1) and ds.x_std[3] == 1.0
    # the test split uses the training statistics; its targets stay in original units
    train_rows = ds.X_train * ds.x_std + ds.x_mean
    test_rows = ds.X_test * ds.x_std + ds.x_mean
    assert np.allclose(np.sort(np.concatenate([train_rows, test_rows])[:, 0]),
                       np.sort(table[:, 0]))
    y_train_orig = ds.y_train * ds.y_std + ds.y_mean
    assert np.allclose(np.sort(np.concatenate([y_train_orig, ds.y_test])),
                       np.sort(table[:, 8]))
    assert abs(y_train_orig.mean() - ds.y_mean) < 1e-12
    assert abs(y_train_orig.std() - ds.y_std) < 1e-12
    again = regression_dataset("kin8nm", path=p, seed=4)
    assert np.array_equal(again.X_test, ds.X_test)
    other = regression_dataset("kin8nm", path=p, seed=5)
    assert not np.array_equal(other.X_test, ds.X_test)
    with pytest.raises(ValueError, match="path"):
        regression_dataset("kin8nm")
    with pytest.raises(ValueError, match="test_fraction"):
        regression_dataset("kin8nm", path=p, test_fraction=1.5)
    with pytest.raises(ValueError, match="name"):
        regression_dataset("boston")


def test_sklearn_datasets():
    ds = regression_dataset(seed=0)
    assert ds.name == "diabetes" and ds.X_train.shape == (398, 10) and ds.input_dim == 10
    assert abs(ds.y_train.mean()) < 1e-12 and abs(ds.y_train.std() - 1) < 1e-12
    assert 25 < ds.y_test.mean() < 346  # original units (diabetes targets span 25..346)
    bc = classification_dataset("breast_cancer", seed=0)
    assert bc.n_classes == 2 and set(np.unique(bc.y_train)) == {0.0, 1.0}
    assert bc.X_train.shape[0] + bc.X_test.shape[0] == 569
    dg = classification_dataset("digits", test_fraction=0.2, seed=1)
    assert dg.n_classes == 10 and dg.X_test.shape == (359, 64)


def test_missing_sklearn_gives_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(ImportError, match="pip install scikit-learn"):
        regression_dataset("diabetes", seed=0)
    with pytest.raises(ImportError, match="pip install scikit-learn"):
        classification_dataset("digits", seed=0)


def test_kin8nm_with_a_byte_order_mark_keeps_its_first_row(tmp_path):
    # a UTF-8 BOM glued to the first field made it non-numeric: the first data row was
    # skipped as a header
    body = "\n".join(",".join(repr(float(v)) for v in r) for r in ROWS)
    p = tmp_path / "bom.csv"
    p.write_bytes(b"\xef\xbb\xbf" + body.encode())
    X, y = load_kin8nm(p)
    assert np.array_equal(X, ROWS[:, :8]) and np.array_equal(y, ROWS[:, 8])
    header = ",".join([f"theta{i}" for i in range(1, 9)] + ["y"])
    p.write_bytes(b"\xef\xbb\xbf" + (header + "\n" + body).encode())
    X, y = load_kin8nm(p)
    assert np.array_equal(X, ROWS[:, :8]) and np.array_equal(y, ROWS[:, 8])


@pytest.mark.parametrize("scale", [1e160, 1e300, 1e-160, 1e-300])
def test_standardisation_of_huge_and_tiny_values(tmp_path, scale):
    # beyond 1e154 the variance's squares overflowed (the column came out 0 or NaN); below
    # 1e-154 they underflowed. Scaled by a power of two the statistics are exact scalings
    # of those of the ordinary table, so the standardised columns are bit for bit the same
    rng = np.random.default_rng(0)
    table = rng.standard_normal((50, 9)) * 3 + 5
    p, q = tmp_path / "ordinary.csv", tmp_path / "scaled.csv"
    np.savetxt(p, table, delimiter=",", fmt="%.17g")
    e = int(np.round(np.log2(scale)))
    np.savetxt(q, np.ldexp(table, e), delimiter=",", fmt="%.17g")
    a = regression_dataset("kin8nm", path=p, seed=1)
    b = regression_dataset("kin8nm", path=q, seed=1)
    for name in ("X_train", "X_test", "y_train"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(np.ldexp(a.x_std, e), b.x_std)
    assert np.ldexp(a.y_std, e) == b.y_std and np.all(np.isfinite(b.X_train))


def test_standardisation_is_numpys_for_ordinary_data():
    # the power-of-two scaling changes no bit of ordinary statistics (every experiment's
    # numbers stay as they were): NumPy's mean and std, then (x - mean) / std
    from vits_ref.data.uci import _standardise

    rng = np.random.default_rng(2)
    A, B = rng.standard_normal((97, 5)) * [1, 3, 100, 1e-3, 7] + [0, 5, -2, 1, 1e4], \
        rng.standard_normal((11, 5))
    tr, te, m, s = _standardise(A, B)
    assert np.array_equal(m, A.mean(0)) and np.array_equal(s, A.std(0))
    assert np.array_equal(tr, (A - A.mean(0)) / A.std(0))
    assert np.array_equal(te, (B - A.mean(0)) / A.std(0))
