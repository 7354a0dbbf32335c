#!/usr/bin/env python3
"""Sanity check for serving_points.json: counts, required fields, exclusions."""
import json, os, sys
from collections import Counter

here = os.path.dirname(os.path.abspath(__file__))
doc = json.load(open(os.path.join(here, "serving_points.json")))
models = json.load(open(os.path.join(here, "..", "models.json")))
pts = doc["points"]
GPUS = {"gb200", "gh200", "b200", "h200", "h100-sxm", "h100-pcie", "a100-80g", "l40s", "rtx-4090"}
MOE = {"mixtral-8x7b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "glm-4.5"}
KEYS = ["id", "source", "engine", "engine_version", "gpu", "gpus", "tp", "pp", "ep", "model", "weight_dtype",
        "kv_dtype", "isl", "osl", "prefix", "load", "measured", "notes"]

KERNEL_KEYS = ["id", "engine", "weight_dtype", "gpus", "kernel", "eta_moe_gemm", "range", "source", "basis"]
engines = {p["engine"] for p in pts}
for k in doc.get("engine_kernels", []):
    assert list(k) == KERNEL_KEYS, (k.get("id"), list(k))
    lo, hi = k["range"]
    assert 0.001 <= lo <= k["eta_moe_gemm"] <= hi <= 1, k["id"]
    assert k["engine"] in engines and k["gpus"] and set(k["gpus"]) <= GPUS, k["id"]
    assert k["source"] and k["basis"], k["id"]

ids = [p["id"] for p in pts]
assert len(ids) == len(set(ids)), "duplicate ids"
for p in pts:
    keys = [k for k in p if k != "engine_limits"]  # engine_limits is optional, after load
    if "attention_dp" in keys:  # optional, right after ep, true/false/null
        assert keys[keys.index("ep") + 1] == "attention_dp", (p["id"], list(p))
        assert p["attention_dp"] in (True, False, None), p["id"]
    assert [k for k in keys if k != "attention_dp"] == KEYS, (p["id"], list(p))
    lim = p.get("engine_limits")
    if lim is not None:
        assert [k for k in lim if k != "kv_memory"] == ["max_seqs", "max_num_tokens", "admission", "basis"], p["id"]
        mem = lim.get("kv_memory")
        assert mem is None or (0 < mem["fraction"] <= 1 and mem["of"] in ("free", "total")), p["id"]
        assert lim["admission"] in (None, "peak", "current"), p["id"]
        for k in ("max_seqs", "max_num_tokens"):
            assert lim[k] is None or (isinstance(lim[k], int) and lim[k] >= 1), (p["id"], k)
        assert lim["basis"], p["id"]
    n = p["load"].get("num_requests")
    assert n is None or (isinstance(n, int) and n >= 1), p["id"]
    assert p["gpu"] in GPUS, p["id"]
    assert p["model"] in models, (p["id"], p["model"])
    assert p["model"] not in ("llama-3.1-70b", "llama-3.3-70b"), p["id"]
    for k in ("weight_dtype", "isl", "osl"):
        assert p[k] is not None, (p["id"], k)
    assert p["source"]["key"] and p["source"]["url"], p["id"]
    m = p["measured"]
    assert any(m[k] is not None for k in ("itl_ms", "tpot_ms", "ttft_ms", "e2e_ms", "throughput_tok_s")), p["id"]
    assert p["load"]["mode"] in ("batch", "concurrency", "max_throughput", "request_rate"), p["id"]

src = Counter(p["source"]["key"] for p in pts)
gpus = Counter(p["gpu"] for p in pts)
mods = Counter(p["model"] for p in pts)
moe = sorted(set(mods) & MOE)
print(f"points: {len(pts)}")
print(f"sources ({len(src)}): {dict(src)}")
print(f"gpus ({len(gpus)}): {dict(gpus)}")
print(f"models ({len(mods)}): {dict(mods)}")
print(f"moe models: {moe}")
assert len(pts) >= 30 and len(src) >= 4 and len(gpus) >= 3 and len(mods) >= 3 and moe
print("OK")
