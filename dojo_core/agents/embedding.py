"""Code embeddings of IR text (issue 7): a built-in one and a pluggable LLM endpoint.

``HashedEmbedding(dim=64)``: no network, no model.  The IR text is split into tokens
(identifiers, numbers, operators, and one ``<indent:N>`` token per line); each token is
taken twice, as written and abstracted (identifiers -> ``ID``, numbers -> ``NUM``, keywords
and annotations kept), and the 1-, 2- and 3-grams of both streams are hashed (blake2b, so
the same in every process) into ``BUCKETS`` counts, log-scaled, multiplied by a fixed
random projection (seeded Gaussian, ``BUCKETS x dim``) and L2-normalized.  Guarantees:
deterministic across processes and machines (float32, fixed seed), unit norm (the zero
vector only for an empty text), texts that differ only in names stay close.

``EndpointEmbedding(url, model, key=None)``: an OpenAI-compatible ``POST {url}/embeddings``
with ``{"model": M, "input": [texts]}``, answered ``{"data": [{"index": i, "embedding":
[...]}, ...]}``; standard library HTTP only.  Vectors are L2-normalized and cached in memory
by (model, text hash).  Every failure (connection, HTTP status, malformed answer) raises
``EmbeddingError`` with a one-line reason.

``default_embedder()``: the endpoint when ``DOJO_EMBEDDING_URL`` is set (model
``DOJO_EMBEDDING_MODEL``, default ``text-embedding-3-small``; bearer key
``DOJO_EMBEDDING_KEY``), else ``HashedEmbedding()``.  Both have ``name``, ``dim`` (known
after the first call for an endpoint), ``embed(text)`` and ``embed_many(texts)``.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
import urllib.error
import urllib.request
from collections import OrderedDict
from typing import Optional, Sequence

import numpy as np

from ..errors import Unlocated

BUCKETS = 4096
PROJECTION_SEED = 20260407
_TOKEN = re.compile(r"(?:max|min)=|[A-Za-z_][A-Za-z0-9_.]*|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|"
                    r"//|[-+*/]=|[<>=!]=|\.\.|\S")
KEYWORDS = frozenset({
    "kernel", "in", "out", "inout", "temp", "for", "local", "parallel", "vector", "unroll",
    "register", "stack", "shared", "min", "max", "exp", "log", "sqrt", "rsqrt", "tanh", "erf",
    "abs", "pow", "select", "inf", "f32", "f64", "f16", "bf16", "i32", "i64",
    "gpu.block.x", "gpu.block.y", "gpu.block.z", "gpu.thread.x", "gpu.thread.y", "gpu.thread.z",
})


class EmbeddingError(Unlocated):
    """An embedding endpoint could not give a vector (the message says why)."""


def _normalize(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return (v / n).astype(np.float32) if n > 0 else v.astype(np.float32)


def tokens(text: str) -> list:
    """The token stream of IR text: comments dropped, one indent token per non-empty line."""
    out = []
    for line in text.splitlines():
        code = line.split("#", 1)[0]
        if not code.strip():
            continue
        out.append(f"<indent:{(len(code) - len(code.lstrip())) // 2}>")
        out.extend(_TOKEN.findall(code))
    return out


def _abstract(token: str) -> str:
    if token in KEYWORDS or token.startswith("<"):
        return token
    if token[0].isdigit():
        return "NUM"
    if token[0].isalpha() or token[0] == "_":
        return "ID"
    return token


def _bucket(gram: str) -> int:
    return int.from_bytes(hashlib.blake2b(gram.encode(), digest_size=4).digest(), "little") % BUCKETS


class HashedEmbedding:
    """The built-in embedding (module docstring)."""

    def __init__(self, dim: int = 64, ngrams: int = 3, cache_size: int = 4096):
        self.dim, self.ngrams = dim, ngrams
        self.name = f"hashed-{dim}"
        rng = np.random.default_rng(PROJECTION_SEED + dim)
        self._projection = (rng.standard_normal((BUCKETS, dim)) / math.sqrt(dim)).astype(np.float32)
        self._cache: OrderedDict = OrderedDict()
        self._cache_size = cache_size

    def counts(self, text: str) -> np.ndarray:
        """The hashed n-gram counts (length BUCKETS) before projection."""
        raw = tokens(text)
        counts = np.zeros(BUCKETS, dtype=np.float32)
        for stream, tag in ((raw, "r"), ([_abstract(t) for t in raw], "a")):
            for n in range(1, self.ngrams + 1):
                for i in range(len(stream) - n + 1):
                    counts[_bucket(tag + "\x1f".join(stream[i:i + n]))] += 1.0
        return counts

    def embed(self, text: str) -> np.ndarray:
        key = hashlib.sha256(text.encode()).digest()
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit.copy()
        vector = _normalize(np.log1p(self.counts(text)) @ self._projection)
        self._cache[key] = vector
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return vector.copy()

    def embed_many(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.embed(t) for t in texts])


class EndpointEmbedding:
    """An OpenAI-compatible embeddings endpoint with an in-memory cache (module docstring)."""

    def __init__(self, url: str, model: str, key: Optional[str] = None, timeout: float = 60,
                 batch: int = 64, cache_size: int = 65536):
        self.url, self.model, self.key = url.rstrip("/"), model, key
        self.timeout, self.batch = timeout, batch
        self.name = f"endpoint:{model}"
        self.dim: Optional[int] = None
        self.requests = 0                        # HTTP requests made (cache misses batched)
        self._cache: OrderedDict = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def _post(self, texts: list) -> list:
        body = json.dumps({"model": self.model, "input": texts}).encode()
        request = urllib.request.Request(self.url + "/embeddings", data=body, method="POST")
        request.add_header("Content-Type", "application/json")
        if self.key:
            request.add_header("Authorization", f"Bearer {self.key}")
        self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                answer = json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raise EmbeddingError(f"{self.url}/embeddings: HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise EmbeddingError(f"{self.url}/embeddings: {type(exc).__name__}: {exc}") from None
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or len(data) != len(texts):
            raise EmbeddingError(f"{self.url}/embeddings: expected {len(texts)} embeddings "
                                 f"under 'data'")
        vectors = [None] * len(texts)
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            emb = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < len(texts) or \
                    not isinstance(emb, list) or not emb:
                raise EmbeddingError(f"{self.url}/embeddings: malformed item {position}")
            try:
                vectors[index] = _normalize(np.asarray(emb, dtype=np.float32))
            except (TypeError, ValueError):
                raise EmbeddingError(f"{self.url}/embeddings: item {position} is not numeric") from None
        if any(v is None for v in vectors):
            raise EmbeddingError(f"{self.url}/embeddings: indices do not cover the input")
        dims = {v.shape[0] for v in vectors}
        if len(dims) != 1 or (self.dim is not None and dims != {self.dim}):
            raise EmbeddingError(f"{self.url}/embeddings: inconsistent dimensions {sorted(dims)}")
        self.dim = dims.pop()
        return vectors

    def embed_many(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        keys = [(self.model, hashlib.sha256(t.encode()).hexdigest()) for t in texts]
        with self._lock:
            first = {k: i for i, k in reversed(list(enumerate(keys)))}
            missing = sorted(i for k, i in first.items() if k not in self._cache)
            for start in range(0, len(missing), self.batch):
                chunk = missing[start:start + self.batch]
                for i, vector in zip(chunk, self._post([texts[i] for i in chunk])):
                    self._cache[keys[i]] = vector
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
            if not texts:
                return np.zeros((0, self.dim or 0), dtype=np.float32)
            return np.stack([self._cache[k].copy() for k in keys])

    def embed(self, text: str) -> np.ndarray:
        return self.embed_many([text])[0]


def default_embedder():
    """The endpoint named by DOJO_EMBEDDING_URL if set, else the built-in HashedEmbedding."""
    url = os.environ.get("DOJO_EMBEDDING_URL", "").strip()
    if url:
        return EndpointEmbedding(url, os.environ.get("DOJO_EMBEDDING_MODEL", "").strip()
                                 or "text-embedding-3-small",
                                 os.environ.get("DOJO_EMBEDDING_KEY") or None)
    return HashedEmbedding()
