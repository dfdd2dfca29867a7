"""``python -m tools.measures`` (make lint): Any per 1,000 product lines and the long files, on a temporary tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import measures


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_any_counts_names_and_attributes_but_not_imports() -> None:
    source = ("import typing\nfrom typing import Any\nfrom typing import Any as A\n\n"
              "x: Any = 1\ny: typing.Any = 2\ndef f(a: dict[str, Any]) -> list[Any]: ...\nAnyway = 3\n")
    assert measures.count_any(source) == 4


def test_the_product_files_leave_out_the_client_and_the_scripted_models(tmp_path: Path) -> None:
    write(tmp_path, "ambient_runner/core.py", "from typing import Any\nx: Any = 1\n")
    write(tmp_path, "ambient_runner/client/main.py", "from typing import Any\nx: Any = 1\n")
    write(tmp_path, "ambient_runner/scripted_models/gemini.py", "from typing import Any\nx: Any = 1\n")
    write(tmp_path, "ambient_runner/clientele.py", "x = 1\n")  # a name that starts like an excluded folder
    write(tmp_path, "ag_ui_demo/adapter.py", "import typing\ny: typing.Any = 2\nz = 3\n")
    write(tmp_path, "tests/test_core.py", "from typing import Any\nx: Any = 1\n")
    write(tmp_path, "tools/other.py", "from typing import Any\nx: Any = 1\n")

    found = measures.measure(tmp_path)

    assert [f.path for f in found.files] == ["ambient_runner/clientele.py", "ambient_runner/core.py",
                                             "ag_ui_demo/adapter.py"]
    assert (found.any_count, found.lines) == (2, 6)
    assert found.any_per_1000 == pytest.approx(1000 * 2 / 6)


def test_within_the_bounds_it_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "ambient_runner/core.py", "from typing import Any\nx: Any = 1\n" + "y = 2\n" * 98)
    assert measures.main(["--root", str(tmp_path)]) == 0
    assert "Any: 1 in 100 product lines = 10.0 per 1,000" in capsys.readouterr().out


def test_too_many_any_fails_unless_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "ambient_runner/core.py", "from typing import Any\nx: Any = 1\n" + "y = 2\n" * 48)
    assert measures.main(["--root", str(tmp_path)]) == 1
    assert "ambient_runner/core.py (50 lines)" in capsys.readouterr().out
    assert measures.main(["--root", str(tmp_path), "--report"]) == 0


def test_a_file_over_450_lines_fails_and_is_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "ambient_runner/short.py", "x = 1\n" * 450)
    write(tmp_path, "ag_ui_demo/long.py", "x = 1\n" * 451)
    assert measures.main(["--root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "files over 450 lines: 1" in out and " 451  ag_ui_demo/long.py" in out
    assert "short.py" not in out
    assert measures.main(["--root", str(tmp_path), "--report"]) == 0


def test_a_named_long_file_passes_but_no_other(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "ambient_runner/known.py", "x = 1\n" * 451)
    assert measures.main(["--root", str(tmp_path), "--still-long", "ambient_runner/known.py"]) == 0
    write(tmp_path, "ambient_runner/grown.py", "x = 1\n" * 452)
    assert measures.main(["--root", str(tmp_path), "--still-long", "ambient_runner/known.py"]) == 1
