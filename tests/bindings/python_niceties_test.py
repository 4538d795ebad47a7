"""tests/bindings/python_niceties_test.py: what Python users expect around the package (issue #28, part 5).

- a progress bar on stderr for long loads and writes: drawn when asked (progress_bar=True, or
  RINGLOAD_PROGRESS=1), never when told not to, and by default only where stderr is a terminal
  (here it is not: pytest captures it); tqdm's where installed, else our own one-line bar;
- `python -m ringload` is the CLI (its output and exit status);
- the extension's type stubs (_ringload.pyi) sit beside it and name its API, and the package
  is marked typed (py.typed).
"""
import os
import subprocess
import sys

import pytest

import ringload

DATA = os.environ.get("RINGLOAD_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data"))


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    """A 72 MiB safetensors file: over the 64 MiB below which the default bar stays away."""
    torch = pytest.importorskip("torch")
    path = str(tmp_path_factory.mktemp("progress") / "big.safetensors")
    ringload.save_file({f"t{i}": torch.full((9 << 20,), i, dtype=torch.uint8) for i in range(8)}, path)
    return path


def load(path, **options):
    with ringload.TensorDeserializer(path, device="cpu", **options) as deserializer:
        return len(deserializer.flat_tensors())


def test_a_bar_when_asked(big_file, capfd):
    assert load(big_file, progress_bar=True) == 8
    err = capfd.readouterr().err
    assert "big.safetensors" in err and "100%" in err, err[-500:]


def test_no_bar_by_default_where_stderr_is_not_a_terminal(big_file, capfd, monkeypatch):
    monkeypatch.delenv("RINGLOAD_PROGRESS", raising=False)
    assert load(big_file) == 8
    assert capfd.readouterr().err == ""


def test_the_environment_turns_bars_on_and_the_argument_wins(big_file, capfd, monkeypatch):
    monkeypatch.setenv("RINGLOAD_PROGRESS", "1")
    load(big_file)
    assert "100%" in capfd.readouterr().err
    load(big_file, progress_bar=False)
    assert capfd.readouterr().err == ""
    monkeypatch.setenv("RINGLOAD_PROGRESS", "0")
    load(big_file)
    assert capfd.readouterr().err == ""


def test_our_own_bar_where_tqdm_is_missing(big_file, capfd, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm now raises ImportError
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    load(big_file, progress_bar=True)
    err = capfd.readouterr().err
    assert "big.safetensors 100%" in err and "GB/s" in err and err.endswith("\n"), err[-300:]


def test_a_callback_replaces_the_bar(big_file, capfd):
    steps = []
    load(big_file, progress_bar=True, progress=lambda *step: steps.append(step))
    assert steps and steps[-1][0] == steps[-1][1]
    assert capfd.readouterr().err == ""


@pytest.fixture(scope="module")
def big_tensors():
    torch = pytest.importorskip("torch")
    return {f"t{i}": torch.full((9 << 20,), i, dtype=torch.uint8) for i in range(8)}


@pytest.mark.parametrize("format", ["safetensors", "tensorizer", "torch"])
def test_a_bar_for_a_write_when_asked(big_tensors, tmp_path, capfd, format):
    path = str(tmp_path / f"written.{format}")
    ringload.save_file(big_tensors, path, format=format, progress_bar=True)
    err = capfd.readouterr().err
    assert f"written.{format}" in err and "100%" in err, err[-500:]
    assert load(path) == 8


def test_no_write_bar_by_default_where_stderr_is_not_a_terminal(big_tensors, tmp_path, capfd, monkeypatch):
    monkeypatch.delenv("RINGLOAD_PROGRESS", raising=False)
    ringload.save_file(big_tensors, str(tmp_path / "quiet.safetensors"))
    assert capfd.readouterr().err == ""
    monkeypatch.setenv("RINGLOAD_PROGRESS", "1")
    ringload.save_file(big_tensors, str(tmp_path / "loud.safetensors"))
    assert "100%" in capfd.readouterr().err


def test_a_write_reports_its_progress_and_a_raising_callback_stops_it(big_tensors, tmp_path):
    steps = []
    path = str(tmp_path / "counted.tensors")
    with ringload.TensorSerializer(path, progress=lambda *step: steps.append(step)) as serializer:
        serializer.write_state_dict(big_tensors)
    data_bytes = sum(t.numel() for t in big_tensors.values())
    assert steps and steps[-1][0] == steps[-1][1] >= data_bytes, steps[-3:]
    assert all(a[0] <= b[0] for a, b in zip(steps, steps[1:]))

    def stop(*step):
        raise KeyboardInterrupt("stop the write")

    stopped = str(tmp_path / "stopped.tensors")
    serializer = ringload.TensorSerializer(stopped, progress=stop)
    serializer.write_state_dict(big_tensors)
    with pytest.raises(KeyboardInterrupt, match="stop the write"):
        serializer.close()
    assert os.listdir(tmp_path) == ["counted.tensors"]  # no file, whole or partial, under any name


def test_python_dash_m_ringload_is_the_cli():
    fixture = os.path.join(DATA, "tensorizer", "tiny_v1.tensors")
    out = subprocess.run([sys.executable, "-m", "ringload", "info", fixture], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert "format: tensorizer" in out.stdout
    out = subprocess.run([sys.executable, "-m", "ringload", "load", "/nonexistent.safetensors"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "/nonexistent.safetensors" in out.stderr


def test_type_stubs_name_the_extension_api():
    package = os.path.dirname(ringload.__file__)
    assert os.path.exists(os.path.join(package, "py.typed"))
    stubs = open(os.path.join(package, "_ringload.pyi")).read()
    for name in ("class Deserializer", "class Loaded", "def tensor_rows", "def write_tensorizer", "class TensorStream"):
        assert name in stubs, name
