"""tests/support/cli_runs.py: what the object-store script tests (s3, gcs, azure) share about
running the CLI and reading what it loaded.

    cli = CliRuns(RINGLOAD, DATA)
    env = clean_env(home, ("AWS_",), AWS_REGION="us-east-1")
    out = cli.run(env, "load", uri, "--json", "--sha256")
    check("loaded", loaded(out) == expected(cli.manifest_of("basic_v1.tensors")), out.stderr)
"""
import json
import os
import subprocess


def clean_env(home, prefixes, **extra):
    """The process's environment without the variables starting with `prefixes` (a provider's
    settings), HOME set to `home`, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(tuple(prefixes))}
    env["HOME"] = home
    env.update(extra)
    return env


class CliRuns:
    def __init__(self, ringload, data):
        self.ringload, self.data = ringload, data

    def run(self, env, *args):
        return subprocess.run([self.ringload, *args], capture_output=True, text=True, timeout=300, env=env)

    def manifest_of(self, name):
        with open(os.path.join(self.data, "tensorizer", name + ".json")) as file:
            return json.load(file)


def expected(manifest):
    """(path, dtype, shape, sha256) of each tensor a fixture's manifest vouches for."""
    return [(t["path"], t["dtype"].removeprefix("torch."), t["shape"], t["sha256"]) for t in manifest["tensors"]]


def loaded(out):
    """The same of what `load --json --sha256` printed; None when it failed."""
    if out.returncode != 0:
        return None
    return [(g["path"], g["dtype"], g["shape"], g["sha256"]) for g in json.loads(out.stdout)["tensors"]]


def one_line(text):
    return text.count("\n") == 1
