"""Runs tensorizer's own tests/test_serialization.py (copied unchanged from coreweave/tensorizer
v2.11.1, see README.md) with ringload's TensorSerializer, TensorDeserializer, EncryptionParams
and DecryptionParams in place of tensorizer's: the shim/ folder's `tensorizer` package is
ringload's four classes and the real tensorizer for the rest.

    PYTHONPATH=<build>/bindings/python .venv-vllm/bin/python tests/tensorizer_upstream/run.py
    .venv-vllm/bin/python tests/tensorizer_upstream/run.py --real     # the real tensorizer

What the tests reach for on the network is here instead, in a fresh folder that is the tests'
working directory: the hub's EleutherAI/gpt-neo-125M is a small GPT-Neo of the same width
(tests/support/tiny_gpt_neo.py) in ./EleutherAI/gpt-neo-125M, which transformers opens as a
local folder; s3://tensorized/EleutherAI/gpt-neo-125M/model.tensors (and fp16/model.tensors) are
that model written by the real tensorizer into a local S3 server (moto, AWS_ENDPOINT_URL),
public-read as CoreWeave's bucket is (the tests read it without credentials);
test_redis starts its own redis-server, as upstream's does. Other pytest arguments pass
through (-k, -x, ...).

Exit status: pytest's (77, a skip, without torch, transformers, tensorizer, redis-server, moto
or ringload).
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SUPPORT = os.path.join(os.path.dirname(HERE), "support")
sys.path.insert(0, SUPPORT)
MODEL = "EleutherAI/gpt-neo-125M"
BUCKET = "tensorized"


# The skips tensorizer's tests may make here beyond a missing GPU (tests/support/strict_skips.py):
# several GPUs, and the test conftest.py skips because it patches tensorizer's internals (its
# reason starts "patches"). Any other (the reasons printed at the end) fails the run.
ALLOWED_SKIPS = ["--allow-skip", r"^Requires multiple devices", "--allow-skip", r"^patches tensorizer\."]

def _missing(real: bool):
    """Why the run cannot happen here, or None."""
    try:
        import redis  # noqa: F401
        import tensorizer  # noqa: F401
        import tokenizers  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
        if not real:
            import ringload  # noqa: F401
    except ImportError as error:
        return str(error)
    if shutil.which("redis-server") is None:
        return "redis-server is not installed (scripts/setup.sh installs it)"
    return None


def _moto_site(python: str) -> str:
    """Where moto is installed for `python`: test_stream_io.py imports moto at its top."""
    return subprocess.run([python, "-c", "import moto, os; print(os.path.dirname(os.path.dirname(moto.__file__)))"],
                          check=True, capture_output=True, text=True).stdout.strip()


def _upload_model(s3, work: str) -> None:
    """The tiny model as tensorizer writes it (fp32 and fp16), where the S3 tests look."""
    import torch
    from tensorizer import TensorSerializer
    from tiny_gpt_neo import make_tiny_gpt_neo
    from transformers import AutoModelForCausalLM
    folder = os.path.join(work, MODEL)
    make_tiny_gpt_neo(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    client = s3.client()
    client.create_bucket(Bucket=BUCKET)
    for key, dtype in ((f"{MODEL}/model.tensors", torch.float32), (f"{MODEL}/fp16/model.tensors", torch.float16)):
        path = os.path.join(work, "upload.tensors")
        serializer = TensorSerializer(path)
        serializer.write_module(model.to(dtype))
        serializer.close()
        client.upload_file(path, BUCKET, key, ExtraArgs={"ACL": "public-read"})  # read anonymously
        os.unlink(path)


def _environment(work: str, s3_url: str, moto_site: str, real: bool) -> dict:
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("AWS_") or name == "AWS_CA_BUNDLE"}
    paths = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    support = os.path.abspath(os.path.join(HERE, "..", "support"))  # strict_skips
    env["PYTHONPATH"] = os.pathsep.join([*paths, support] if real else [os.path.join(HERE, "shim"), *paths, support])
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", AWS_ENDPOINT_URL=s3_url,
               AWS_SHARED_CREDENTIALS_FILE=os.path.join(work, "no-aws-credentials"),
               AWS_CONFIG_FILE=os.path.join(work, "no-aws-config"), TENSORIZER_UPSTREAM_MOTO_SITE=moto_site,
               TENSORIZER_UPSTREAM_REAL="1" if real else "0")
    return env


def main() -> int:
    real = "--real" in sys.argv[1:]
    arguments = [a for a in sys.argv[1:] if a != "--real"]
    missing = _missing(real)
    if missing is not None:
        print(f"skipped: {missing}")
        return 77
    from s3_server import MotoServer
    try:
        s3 = MotoServer()
    except RuntimeError as error:
        print(f"skipped: {error}")
        return 77
    with s3, tempfile.TemporaryDirectory(prefix="tensorizer-upstream-") as work:
        _upload_model(s3, work)
        command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "strict_skips",
                   *ALLOWED_SKIPS, "--rootdir", HERE, *arguments, os.path.join(HERE, "test_serialization.py")]
        return subprocess.call(command, cwd=work, env=_environment(work, s3.url, _moto_site(s3.python), real))


if __name__ == "__main__":
    sys.exit(main())
