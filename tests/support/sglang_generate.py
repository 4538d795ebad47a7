#!/usr/bin/env python3
"""tests/support/sglang_generate.py: greedy tokens from PyPI's SGLang on the CPU, one engine per
process (tests/bindings/sglang_generate_test.py runs it once per loader).

    sglang_generate.py MODEL_DIR LOAD_FORMAT TOKENS PROMPT_IDS_JSON [EXTRA_JSON]

sglang.Engine with its own tokenizer manager, scheduler and detokenizer processes, its model
runner and LlamaForCausalLM, the torch_native attention backend (SGLANG_USE_CPU_ENGINE=1; the
pure-Python modules of sglang-kernel with a stub for its compiled ops, scripts/setup_sglang.sh),
with load_format LOAD_FORMAT ("auto": SGLang's DefaultModelLoader; "ringload"). Prints one JSON
line {"tokens": [[...], ...], "ringload_log": the scheduler's last "ringload: weights from"
line or ""}; where the engine fails to start, {"error": ...} and exit status 2.
"""
import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading

os.environ["SGLANG_USE_CPU_ENGINE"] = "1"
os.environ["SGLANG_PLUGINS"] = "ringload"  # only ours, whatever else is installed
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

# SGLang's ZMQ sockets (PortArgs: NamedTemporaryFile(delete=False), never removed) go to a
# folder of this run's own. The scheduler process is spawned and imports this file again (as
# __mp_main__): it keeps the parent's folder.
if "SGLANG_GENERATE_TMP" not in os.environ:
    os.environ["SGLANG_GENERATE_TMP"] = tempfile.mkdtemp(prefix="sglang-generate-")
RUN_TMP = os.environ["SGLANG_GENERATE_TMP"]
os.environ["TMPDIR"] = tempfile.tempdir = RUN_TMP

# tqdm's multiprocessing lock is a named POSIX semaphore that the scheduler process, SIGKILLed
# by Engine.shutdown, would leave in /dev/shm: a thread lock instead.
with contextlib.suppress(ImportError):
    from tqdm import tqdm as _tqdm
    _tqdm.set_lock(threading.RLock())


class StderrTee:
    """fd 2 of this process and of the SGLang processes it starts (they inherit it) through a
    pipe to the real stderr and to self.text: the scheduler's log lines are checked."""

    def __enter__(self):
        sys.stderr.flush()
        self.saved = os.dup(2)
        read_end, write_end = os.pipe()
        os.dup2(write_end, 2)
        os.close(write_end)
        self.chunks = []
        self.thread = threading.Thread(target=self._pump, args=(read_end,), daemon=True)
        self.thread.start()
        return self

    def _pump(self, read_end):
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                self.chunks.append(chunk)
                os.write(self.saved, chunk)

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self.saved, 2)  # our end closed: EOF once SGLang's processes are gone
        self.thread.join(timeout=30)
        os.close(self.saved)
        self.text = b"".join(self.chunks).decode(errors="replace")
        return False


def _sigquit(signum, frame):
    """SGLang's children SIGQUIT this process when they fail, and its own handler then kills
    the whole tree (the test would see only a killed process): Engine() raises instead."""
    print("sglang_generate: SIGQUIT from an SGLang process (it failed)", file=sys.stderr, flush=True)


def _load_snapshots():
    with contextlib.suppress(OSError):
        return {name for name in os.listdir("/dev/shm") if name.startswith("sglang_loads_")}
    return set()


def generate(folder, load_format, ids, tokens, extra):
    """(tokens per prompt, the ringload log line or "")."""
    import sglang
    from sglang.srt.managers.load_snapshot import shm_path_for
    from sglang.srt.utils import kill_process_tree
    engine, snapshots_before, log = None, _load_snapshots(), StderrTee()
    try:
        with log:
            try:
                # A small KV cache (the default takes 2 GB and 8 s); no CUDA graphs, one rank.
                engine = sglang.Engine(
                    model_path=folder, load_format=load_format, model_loader_extra_config=json.dumps(extra),
                    device="cpu", dtype="float32", attention_backend="torch_native", sampling_backend="pytorch",
                    disable_cuda_graph=True, tp_size=1, max_total_tokens=4096, mem_fraction_static=0.1,
                    random_seed=0, disable_radix_cache=True, log_level="info", custom_sigquit_handler=_sigquit)
                outputs = engine.generate(input_ids=ids, sampling_params={
                    "temperature": 0.0, "max_new_tokens": tokens, "ignore_eos": True})
            finally:
                if engine is not None:
                    engine.shutdown()  # SGLang leaves its load snapshot in /dev/shm
                    with contextlib.suppress(OSError):
                        os.unlink(shm_path_for(engine.port_args.instance_id))
                else:  # a failed start: its processes, and the snapshot of an engine we never held
                    kill_process_tree(os.getpid(), include_parent=False)
                    for name in _load_snapshots() - snapshots_before:
                        with contextlib.suppress(OSError):
                            os.unlink(os.path.join("/dev/shm", name))
    except Exception as error:  # with the scheduler's own error line (its traceback is on stderr)
        causes = [line for line in log.text.splitlines() if "Error" in line and "Ignore import error" not in line]
        raise RuntimeError(f"{error} [{causes[-1].strip() if causes else 'no error line'}]") from error
    lines = [line for line in log.text.splitlines() if "ringload: weights from" in line]
    return [list(output["output_ids"]) for output in outputs], (lines[-1] if lines else "")


def main():
    folder, load_format, tokens, ids = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
    extra = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
    try:
        made, log_line = generate(folder, load_format, ids, tokens, extra)
    except Exception as error:
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}), flush=True)
        # After a failed start SGLang's half-made ZMQ contexts block forever when collected:
        # end at once rather than in the interpreter's exit.
        shutil.rmtree(RUN_TMP, ignore_errors=True)
        os._exit(2)
    print(json.dumps({"tokens": made, "ringload_log": log_line}), flush=True)


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(RUN_TMP, ignore_errors=True)
