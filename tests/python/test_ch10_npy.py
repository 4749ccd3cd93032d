"""Chapter 10's --save-npy, read back in NumPy: every output of every variant is written, with its
inputs, and the forward can be checked from the inputs alone. The rows form's and the varlen
form's outputs are recomputed here from x, the weights, seq_idx, the initial states, cu_seqlens,
the cache-row indices and the cache (the chapter's documented semantics, in NumPy); the backward's
outputs are compared with the fp64 references the chapter writes beside them.

CONV1D_CH10 names the chapter's executable. Without a GPU the chapter exits 77 and the test is
skipped.
"""

import os
import subprocess

import pytest

np = pytest.importorskip("numpy")


def run_chapter(tmp_path, *args):
    exe = os.environ.get("CONV1D_CH10")
    if not exe:
        pytest.skip("CONV1D_CH10 is not set (path of ch10_packed_sequences)")
    out = tmp_path / "npy"
    r = subprocess.run([exe, *args, "--iters", "1", "--warmup", "0", "--save-npy", str(out)],
                       capture_output=True, text=True)
    if r.returncode == 77:
        pytest.skip("no GPU: " + r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "no GPU")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    return out


def load(d, name):
    path = d / f"{name}.npy"
    assert path.is_file(), f"{name}.npy was not written"
    return np.load(path, allow_pickle=False).astype(np.float64)


def silu(z):
    return z / (1.0 + np.exp(-z))


def rows_forward(x, w, bias, seq_idx, init, act):
    """out and final states of the rows form: x [B, D, L], seq_idx [B, L] or None, init [B, D, W-1]
    or None. A tap counts when its input is in the output's sequence; the inputs before t = 0 are
    the initial states of the row's first sequence; padding (a negative id) gives 0."""
    B, D, L = x.shape
    W = w.shape[1]
    ids = seq_idx if seq_idx is not None else np.zeros((B, L), dtype=np.int64)
    out = np.zeros_like(x)
    fin = np.zeros((B, D, W - 1))
    for b in range(B):
        for t in range(L):
            own = ids[b, t]
            if own < 0:
                continue
            acc = np.array(bias, dtype=np.float64)
            for k in range(W):
                p = t - (W - 1) + k
                if p >= 0:
                    if ids[b, p] == own:
                        acc = acc + w[:, k] * x[b, :, p]
                elif init is not None and own == ids[b, 0]:
                    acc = acc + w[:, k] * init[b, :, (W - 1) + p]
            out[b, :, t] = silu(acc) if act else acc
        last = ids[b, L - 1]
        for j in range(W - 1):
            p = L - (W - 1) + j
            in_last = last >= 0 and ids[b, max(p, 0)] == last
            if not in_last:
                continue
            if p >= 0:
                fin[b, :, j] = x[b, :, p]
            elif init is not None:
                fin[b, :, j] = init[b, :, (W - 1) + p]
    return out, fin


def varlen_forward(x, w, bias, cu, slots, cache, read_states, act):
    """out [T, D] and the cache after a varlen forward: sequence n is tokens cu[n] .. cu[n+1]-1 and
    cache row slots[n] (negative: none) its initial state (when read) and its final state."""
    T, D = x.shape
    W = w.shape[1]
    out = np.zeros_like(x)
    after = cache.copy()
    for n in range(len(cu) - 1):
        start, end, s = cu[n], cu[n + 1], slots[n]
        st = cache[s] if (read_states and s >= 0) else np.zeros((D, W - 1))
        for t in range(start, end):
            acc = np.array(bias, dtype=np.float64)
            for k in range(W):
                p = t - (W - 1) + k
                acc = acc + w[:, k] * (x[p] if p >= start else st[:, (W - 1) + (p - start)])
            out[t] = silu(acc) if act else acc
        if s >= 0:
            for j in range(W - 1):
                p = end - (W - 1) + j
                after[s, :, j] = x[p] if p >= start else st[:, end - start + j]
    return out, after


SHAPE = ["--batch", "2", "--dim", "16", "--seqlen", "40", "--width", "4", "--dtype", "fp32",
         "--bias", "--silu", "--initial-states"]


def test_every_output_written_and_checked_in_numpy(tmp_path):
    d = run_chapter(tmp_path, *SHAPE, "--seq-lens", "random:4")
    x, w, bias = load(d, "x"), load(d, "weight"), load(d, "bias")
    seq_idx = load(d, "seq_idx").astype(np.int64)
    init = load(d, "initial_states")
    W = w.shape[1]
    tol = dict(rtol=1e-4, atol=1e-5)

    # The rows form, from the inputs alone; the reference the chapter wrote agrees.
    out, fin = rows_forward(x, w, bias, seq_idx, init, act=True)
    np.testing.assert_allclose(load(d, "reference"), out, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(load(d, "out_cf_packed"), out, **tol)
    np.testing.assert_allclose(load(d, "out_cl_packed").transpose(0, 2, 1), out, **tol)
    for layout in ("cf", "cl"):  # copies of inputs: exact
        np.testing.assert_array_equal(load(d, f"final_states_{layout}_packed"), fin)
    assert (load(d, "out_cf_packed")[np.broadcast_to(seq_idx[:, None, :] < 0, x.shape)] == 0).all()

    # The plain problem (chapter 08's), for the *_plain variants.
    plain, _ = rows_forward(x, w, bias, None, None, act=True)
    np.testing.assert_allclose(load(d, "reference_plain"), plain, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(load(d, "out_cf_plain"), plain, **tol)
    np.testing.assert_allclose(load(d, "out_cl_plain").transpose(0, 2, 1), plain, **tol)

    # The varlen form, from its tokens, cu_seqlens, cache-row indices and cache.
    cu = load(d, "cu_seqlens").astype(np.int64)
    slots = load(d, "state_indices").astype(np.int64)
    tokens, cache = load(d, "x_tokens"), load(d, "cache")
    B, D, L = x.shape
    np.testing.assert_array_equal(tokens, x.transpose(0, 2, 1).reshape(B * L, D))
    assert cu[0] == 0 and cu[-1] == B * L and len(slots) == len(cu) - 1
    vout, vcache = varlen_forward(tokens, w, bias, cu, slots, cache, True, act=True)
    np.testing.assert_allclose(load(d, "reference_varlen"), vout, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(load(d, "out_cl_varlen"), vout, **tol)
    np.testing.assert_array_equal(load(d, "cache_reference"), vcache)
    np.testing.assert_array_equal(load(d, "cache_cl_varlen"), vcache)

    # The backward: every gradient against the fp64 references written beside it.
    gtol = dict(rtol=2e-3, atol=2e-4)
    for tag, layouts in (("", ("cf", "cl")), ("_plain", ("cf", "cl"))):
        kind = "plain" if tag else "packed"
        for layout in layouts:
            dx = load(d, f"dx_{layout}_{kind}_bwd")
            if layout == "cl":
                dx = dx.transpose(0, 2, 1)
            np.testing.assert_allclose(dx, load(d, f"dx{tag}_reference"), **tol)
            np.testing.assert_allclose(load(d, f"dweight_{layout}_{kind}_bwd"),
                                       load(d, f"dweight{tag}_reference"), **gtol)
            np.testing.assert_allclose(load(d, f"dbias_{layout}_{kind}_bwd"),
                                       load(d, f"dbias{tag}_reference"), **gtol)
            if not tag:
                np.testing.assert_allclose(load(d, f"dinitial_states_{layout}_packed_bwd"),
                                           load(d, "dinitial_states_reference"), **tol)
    assert load(d, "dfinal_states").shape == (B, D, W - 1)
    assert load(d, "dout").shape == x.shape and load(d, "dout_tokens").shape == tokens.shape
    assert load(d, "dfinal_cache").shape == cache.shape
    np.testing.assert_allclose(load(d, "dx_cl_varlen_bwd"), load(d, "dx_varlen_reference"), **tol)
    np.testing.assert_allclose(load(d, "dweight_cl_varlen_bwd"),
                               load(d, "dweight_varlen_reference"), **gtol)
    np.testing.assert_allclose(load(d, "dbias_cl_varlen_bwd"), load(d, "dbias_varlen_reference"),
                               **gtol)
    np.testing.assert_allclose(load(d, "dstates_cl_varlen_bwd"), load(d, "dstates_reference"),
                               **tol)


def test_chunks_write_their_outputs_too(tmp_path):
    d = run_chapter(tmp_path, *SHAPE, "--seq-lens", "none", "--chunks", "3", "--form", "rows")
    x, w, bias, init = load(d, "x"), load(d, "weight"), load(d, "bias"), load(d, "initial_states")
    out, fin = rows_forward(x, w, bias, None, init, act=True)
    for layout in ("cf", "cl"):
        one, chunks = load(d, f"out_{layout}_packed"), load(d, f"out_{layout}_chunks")
        np.testing.assert_array_equal(chunks, one)  # bit for bit, as the chapter checks
        np.testing.assert_array_equal(load(d, f"final_states_{layout}_chunks"), fin)
        np.testing.assert_array_equal(load(d, f"dx_{layout}_chunks_bwd"),
                                      load(d, f"dx_{layout}_packed_bwd"))
        np.testing.assert_array_equal(load(d, f"dinitial_states_{layout}_chunks_bwd"),
                                      load(d, f"dinitial_states_{layout}_packed_bwd"))
        for name in ("dweight", "dbias"):
            assert load(d, f"{name}_{layout}_chunks_bwd").shape == load(d, f"{name}_reference").shape
    np.testing.assert_allclose(load(d, "out_cf_packed"), out, rtol=1e-4, atol=1e-5)
