"""The .npy writer and reader checked against NumPy.

CONV1D_NPY_WRITER names the helper built from tests/npy_writer_main.cpp:
  npy_writer <dir>           writes known arrays, which numpy.load must read back exactly;
  npy_writer --read <file>   reads a file that numpy.save wrote and prints its descr, shape and sum.
"""

import math
import os
import subprocess
from fractions import Fraction

import pytest

np = pytest.importorskip("numpy")


@pytest.fixture(scope="module")
def helper():
    exe = os.environ.get("CONV1D_NPY_WRITER")
    if not exe:
        pytest.skip("CONV1D_NPY_WRITER is not set (path of the npy_writer helper)")
    if not os.path.isfile(exe):
        pytest.fail(f"CONV1D_NPY_WRITER={exe} does not exist")
    return exe


@pytest.fixture(scope="module")
def written(helper, tmp_path_factory):
    d = tmp_path_factory.mktemp("npy_from_cpp")
    r = subprocess.run([helper, str(d)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return d


def load(d, name):
    return np.load(d / name, allow_pickle=False)


def bits(a):
    return a.view(np.uint16 if a.itemsize == 2 else np.uint32 if a.itemsize == 4 else np.uint64)


def round_bf16(x):
    """Nearest bfloat16 value of the double x (ties to even), by exact rational arithmetic."""
    if x == 0 or math.isinf(x) or math.isnan(x):
        return x
    _, e = math.frexp(abs(x))  # abs(x) = m * 2**e with 0.5 <= m < 1
    quantum = Fraction(2) ** (max(e - 1, -126) - 7)
    n = round(Fraction(abs(x)) / quantum)  # round() of a Fraction breaks ties to even
    v = n * quantum
    largest = (2 - Fraction(2) ** -7) * Fraction(2) ** 127
    r = math.inf if v > largest else float(v)
    return -r if x < 0 else r


# ---- files written by the C++ writer, read by NumPy --------------------------------------------


def test_f4_2d(written):
    a = load(written, "f4_2x3.npy")
    assert a.dtype == np.dtype("<f4")
    assert a.shape == (2, 3)
    assert not np.isfortran(a)
    expected = (np.arange(6) * 0.5 - 1).astype(np.float32).reshape(2, 3)
    assert np.array_equal(bits(a), bits(expected))


def test_f2_1d(written):
    a = load(written, "f2_5.npy")
    assert a.dtype == np.dtype("<f2")
    assert a.shape == (5,)
    values = np.array([1.0, -2.5, 0.1, 1.0 / 3.0, 65520.0], dtype=np.float32)
    with np.errstate(over="ignore"):
        expected = values.astype(np.float16)  # NumPy's own float32 -> float16 rounding
    assert np.array_equal(bits(a), bits(expected)), (bits(a), bits(expected))
    assert np.isinf(a[4]) and a[4] > 0  # 65520 is the tie with infinity: rounds to even = inf
    assert a[0] == 1.0 and a[1] == -2.5


def test_bf16_as_f4(written):
    a = load(written, "bf16_4.npy")
    assert a.dtype == np.dtype("<f4")
    assert a.shape == (4,)
    expected = [round_bf16(x) for x in (1.0, -0.1, 3.14159, 1e30)]
    assert [float(v) for v in a] == expected
    assert np.all(bits(a) & 0xFFFF == 0)  # bf16 values are floats with zero low halves


def test_f8_3d(written):
    a = load(written, "f8_2x2x2.npy")
    assert a.dtype == np.dtype("<f8")
    assert a.shape == (2, 2, 2)
    assert [float(v) for v in a.ravel()] == [i * 0.1 for i in range(8)]


def test_i4_1d(written):
    a = load(written, "i4_3.npy")
    assert a.dtype == np.dtype("<i4")
    assert a.shape == (3,)
    assert a.tolist() == [-7, 0, 2147483647]


def test_f8_0d(written):
    a = load(written, "f8_scalar.npy")
    assert a.dtype == np.dtype("<f8")
    assert a.shape == ()
    assert float(a) == 42.5


def test_headers_are_64_byte_aligned(written):
    for f in sorted(written.iterdir()):
        raw = f.read_bytes()
        assert raw[:8] == b"\x93NUMPY\x01\x00", f.name
        header_len = int.from_bytes(raw[8:10], "little")
        assert (10 + header_len) % 64 == 0, f.name
        assert raw[10 + header_len - 1 : 10 + header_len] == b"\n", f.name
        with open(f, "rb") as fh:  # NumPy's own header parser agrees
            version = np.lib.format.read_magic(fh)
            assert version == (1, 0)
            np.lib.format.read_array_header_1_0(fh)


# ---- files written by NumPy, read by the C++ reader --------------------------------------------


def run_read(helper, path):
    return subprocess.run([helper, "--read", str(path)], capture_output=True, text=True)


def parse_read(out):
    fields = dict(line.split(" ", 1) for line in out.strip().splitlines())
    return fields["descr"], fields["shape"], float(fields["sum"])


READ_CASES = {
    "f4_2d": np.arange(6, dtype=np.float32).reshape(2, 3) * np.float32(0.25),
    "f2_1d": np.array([1.0, -2.5, 0.125, 65504.0, 2.0**-24], dtype=np.float16),
    "f8_0d": np.array(2.5),
    "f8_1d": np.array([1.5, -0.25, 1e300, -1e300]),
    "i4_3d": np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 7,
    "i8_empty": np.zeros((0,), dtype=np.int64),
    "i8_2x0": np.zeros((2, 0), dtype=np.int64),
    "u1": np.array([1, 2, 255], dtype=np.uint8),
    "u2": np.array([0, 65535], dtype=np.uint16),
    "bool": np.array([True, False, True, True]),
    "many_dims": np.ones((1,) * 30 + (3,), dtype=np.float32),
    "long_dims": np.zeros((1000000, 0, 123456789), dtype=np.float64),
}


@pytest.mark.parametrize("name", sorted(READ_CASES))
def test_reader_reads_numpy_save(helper, tmp_path, name):
    arr = READ_CASES[name]
    path = tmp_path / f"{name}.npy"
    np.save(path, arr)
    r = run_read(helper, path)
    assert r.returncode == 0, r.stderr
    descr, shape, total = parse_read(r.stdout)
    assert descr == arr.dtype.str
    assert shape == repr(arr.shape)
    assert total == float(arr.astype(np.float64).sum())  # all sums here are exact


def test_reader_reads_version_2(helper, tmp_path):
    arr = np.arange(5, dtype=np.float64) * 0.5
    path = tmp_path / "v2.npy"
    with open(path, "wb") as f:
        np.lib.format.write_array(f, arr, version=(2, 0))
    assert path.read_bytes()[6:8] == b"\x02\x00"
    r = run_read(helper, path)
    assert r.returncode == 0, r.stderr
    assert parse_read(r.stdout) == ("<f8", "(5,)", 5.0)


def expect_refused(helper, path, what):
    r = run_read(helper, path)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert str(path) in r.stderr, r.stderr
    assert what in r.stderr, r.stderr


def test_reader_refuses_fortran_order(helper, tmp_path):
    # Documented in common/npy.h: Fortran-ordered files are refused rather than silently transposed.
    arr = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    path = tmp_path / "fortran.npy"
    np.save(path, arr)
    assert b"'fortran_order': True" in path.read_bytes()[:128]
    expect_refused(helper, path, "fortran_order")


@pytest.mark.parametrize(
    "name,arr",
    [
        ("big_endian", np.arange(3, dtype=">f4")),
        ("complex", np.arange(3, dtype=np.complex64)),
        ("structured", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")])),
        ("float128", np.zeros(2, dtype=np.longdouble)),
    ],
)
def test_reader_refuses_unsupported_dtypes(helper, tmp_path, name, arr):
    path = tmp_path / f"{name}.npy"
    np.save(path, arr)
    expect_refused(helper, path, "unsupported descr")


def test_reader_refuses_truncated_numpy_file(helper, tmp_path):
    path = tmp_path / "trunc.npy"
    np.save(path, np.arange(10, dtype=np.float32))
    raw = path.read_bytes()
    path.write_bytes(raw[:-3])
    expect_refused(helper, path, "truncated data")


def test_reader_refuses_non_npy_and_missing(helper, tmp_path):
    path = tmp_path / "data.npz"
    np.savez(path, a=np.arange(3))
    expect_refused(helper, path, "bad magic")
    expect_refused(helper, tmp_path / "missing.npy", "cannot open")
