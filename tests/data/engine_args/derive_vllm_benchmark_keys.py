"""The key names of vLLM's serving benchmark result (vllm/benchmarks/serve.py), read with `ast`.

Run: python derive_vllm_benchmark_keys.py VLLM_ROOT/vllm/benchmarks/serve.py OUT.json. Keys:
the `result = {...}` literal of `benchmark()`, the `result_json["..."]` assignments of `main()`,
and for each `process_one_metric("<metric>", ...)` call the keys it writes: mean_/median_/std_
<metric>_ms and p<P>_<metric>_ms for the percentiles asked (--metric-percentiles; here 90,95,99).
"""

import ast
import json
import pathlib
import sys

PERCENTILES = (90, 95, 99)
tree = ast.parse(pathlib.Path(sys.argv[1]).read_text())
keys: set[str] = set()
metrics: list[str] = []
for node in ast.walk(tree):
    if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef) and node.name == "benchmark":
        for n in ast.walk(node):
            if (
                isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "result" for t in n.targets)
                and isinstance(n.value, ast.Dict)
            ):
                keys |= {k.value for k in n.value.keys if isinstance(k, ast.Constant)}
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == "result_json"
        and isinstance(node.slice, ast.Constant)
    ):
        keys.add(node.slice.value)
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "process_one_metric":
        metrics.append(node.args[0].value)
for m in metrics:
    keys |= {f"mean_{m}_ms", f"median_{m}_ms", f"std_{m}_ms", *(f"p{p}_{m}_ms" for p in PERCENTILES)}
pathlib.Path(sys.argv[2]).write_text(json.dumps({"metrics": metrics, "keys": sorted(keys)}) + "\n")
