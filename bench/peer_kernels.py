"""numpy and PyTorch versions of the library kernels that bench/libraries.py times.

Owns ``numpy_fn(np, name, x, sizes)`` and ``torch_fn(torch, name, x, sizes)``: for a library
kernel ``name`` (matmul, bmm, softmax, layernorm, conv2d, attention) and its inputs ``x``
(``kernels.random_inputs``), a zero-argument callable that computes the kernel with the
library, and the dict of its outputs by array name (preallocated where the library has an
``out=`` form; else filled by each call, the previous result released first so that the
allocator hands the same block back). ``KeyError`` for another kernel, so that a caller
(bench/library.py) can add its own.

Guarantees: the callables compute what the kernel computes, in float32 (the workers check
their outputs against the scheduled kernel's, harness tolerance); the library modules are
passed in, never imported here, so the caller controls the environment they load in.
"""
from __future__ import annotations


def numpy_fn(np, name, x, sizes):
    """A zero-argument callable computing the case with numpy, and its output dict."""
    if name == "matmul":
        A, B = x["A"], x["B"]
        C = np.empty((A.shape[0], B.shape[1]), np.float32)
        return lambda: np.matmul(A, B, out=C), {"C": C}
    if name == "bmm":
        X, Y = x["X"], x["Y"]
        Z = np.empty((X.shape[0], X.shape[1], Y.shape[2]), np.float32)
        return lambda: np.matmul(X, Y, out=Z), {"Z": Z}
    if name == "softmax":
        X = x["X"]
        Y = np.empty_like(X)

        def f():
            np.subtract(X, X.max(axis=1, keepdims=True), out=Y)
            np.exp(Y, out=Y)
            np.divide(Y, Y.sum(axis=1, keepdims=True), out=Y)
        return f, {"Y": Y}
    if name == "layernorm":
        X, g, b, eps = x["X"], x["gamma"], x["beta"], np.float32(x["eps"])
        Y = np.empty_like(X)

        T = np.empty_like(X)

        def f():
            mu = X.mean(axis=1, keepdims=True)
            np.subtract(X, mu, out=Y)
            var = np.mean(np.multiply(Y, Y, out=T), axis=1, keepdims=True)
            np.multiply(Y, 1.0 / np.sqrt(var + eps), out=Y)
            np.multiply(Y, g, out=Y)
            np.add(Y, b, out=Y)
        return f, {"Y": Y}
    if name == "conv2d":
        X, Wt = x["X"], x["Wt"]
        n, c, hp, wp = X.shape
        f_, h, w = Wt.shape[0], hp - 2, wp - 2
        cols = np.empty((c, 3, 3, h, w), np.float32)
        Wm = Wt.reshape(f_, c * 9)
        Y = np.empty((n, f_, h, w), np.float32)

        def f():
            for b in range(n):
                for kh in range(3):
                    for kw in range(3):
                        cols[:, kh, kw] = X[b, :, kh:kh + h, kw:kw + w]
                np.matmul(Wm, cols.reshape(c * 9, h * w), out=Y[b].reshape(f_, h * w))
        return f, {"Y": Y}
    if name == "attention":
        Q, K, V, scale = x["Q"], x["K"], x["V"], np.float32(x["scale"])
        O = np.empty_like(Q)

        def f():
            P = Q @ K.T
            P *= scale
            P -= P.max(axis=1, keepdims=True)
            np.exp(P, out=P)
            s = P.sum(axis=1, keepdims=True)
            np.matmul(P, V, out=O)
            np.divide(O, s, out=O)
        return f, {"O": O}
    raise KeyError(name)


def torch_fn(torch, name, x, sizes):
    """A zero-argument callable computing the case with PyTorch, and its output dict (filled
    by each call)."""
    t = {k: torch.from_numpy(v) if getattr(v, "ndim", 0) else v for k, v in x.items()}
    F = torch.nn.functional
    if name == "matmul":
        C = torch.empty(t["A"].shape[0], t["B"].shape[1])
        return lambda: torch.matmul(t["A"], t["B"], out=C), {"C": C}
    if name == "bmm":
        Z = torch.empty(t["X"].shape[0], t["X"].shape[1], t["Y"].shape[2])
        return lambda: torch.bmm(t["X"], t["Y"], out=Z), {"Z": Z}
    # These calls allocate their result. The previous result is released before the next
    # call, so that the allocator can hand the same block back: holding it (``y = f(x)`` in
    # a loop) makes glibc map and unmap a block this large at every call, and the call then
    # pays a page fault per 4 KiB (measured: layernorm 4 GB/s instead of 21 on one thread).
    out = {}
    if name == "softmax":
        def call():
            return "Y", torch.softmax(t["X"], dim=1)
    elif name == "layernorm":
        m = t["X"].shape[1]
        eps = float(x["eps"])

        def call():
            return "Y", F.layer_norm(t["X"], (m,), t["gamma"], t["beta"], eps)
    elif name == "conv2d":
        def call():   # the library kernel's input is already padded: padding 0 on it
            return "Y", F.conv2d(t["X"], t["Wt"])
    elif name == "attention":
        scale = float(x["scale"])
        q, k, v = (t[n].unsqueeze(0) for n in ("Q", "K", "V"))

        def call():
            return "O", F.scaled_dot_product_attention(q, k, v, scale=scale)[0]
    else:
        raise KeyError(name)

    def f():
        out.clear()
        key, value = call()
        out[key] = value
    return f, out
