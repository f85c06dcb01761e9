"""House rules the code must keep (issue #12): no module over 600 lines, and no function
over 80 lines unless its docstring says why ("Longer than 80 lines for one reason: ...")."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "rightsize"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
REASON = "Longer than 80 lines"


def _modules(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _long_modules(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): n
        for p in _modules(root)
        if (n := p.read_text().count("\n")) > MAX_MODULE_LINES
    }


def _unexplained_long_functions(root: Path) -> list[str]:
    found = []
    for path in _modules(root):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES and REASON not in (ast.get_docstring(node) or ""):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_module_is_over_600_lines() -> None:
    assert _long_modules(SRC) == {}


def test_every_function_over_80_lines_says_why() -> None:
    assert _unexplained_long_functions(SRC) == []


def test_the_scans_catch_what_they_look_for(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(90))
    (tmp_path / "long.py").write_text(f"def f():\n{body}\n" + "\n" * 600)
    (tmp_path / "reasoned.py").write_text(f'def g():\n    """{REASON} for one reason: a test."""\n{body}\n')
    assert _unexplained_long_functions(tmp_path) == ["long.py:1 f (91 lines)"]
    assert list(_long_modules(tmp_path)) == ["long.py"]
