#!/usr/bin/env python3
"""vLLM's `--load-format ringload` end to end, with a real vLLM (CPU build, .venv-vllm).

    vllm_test.py PYTHON_DIR        (PYTHON_DIR: build/<preset>/bindings/python)

A tiny Llama (tests/support/tiny_llama.py) is written as safetensors, 2 safetensors shards with
their index json, a torch pytorch_model.bin, a tensorizer file in a folder (made from the shards
by `python -m ringload.vllm_convert`), an encrypted tensorizer file (key file; also made by
vllm_convert) and a safetensors file made from the .bin by vllm_convert, served by nginx over
HTTP; the tensorizer file is also put on the moto S3 server. Greedy tokens with
load_format="ringload" must equal those of vLLM's default loader for each, and ringload's loader
must be what loaded them (its log line), every tensor read straight into vLLM's parameters
where no read-once group streams them (its report: nothing handed over; TP=2 with read_once
off, each rank its own rows and columns); the OpenAI-compatible server started with --load-format
ringload must answer a completion with the same tokens; a corrupt weights file, a missing one, a
checkpoint without one of the model's weights, a wrong key and an unknown option must each fail
the start, the error LLM() raises and its traceback naming the file, weight or option. Two starts
with `{"cache": DIR}` over HTTP: the first fills the node's cache, the second asks nginx only one
HEAD (check_cache). vLLM finds
the loader through the dist-info the build writes beside the package (its vllm.general_plugins
entry point), in every process it spawns.

Every vLLM start costs seconds of imports, so every case, the good ones and then the failing ones,
runs in one child process, one LLM() after the other, with the engine core and its worker in that
process (VLLM_ENABLE_V1_MULTIPROCESSING=0: no engine core and worker processes that import vLLM
and torch again per LLM()); the TP=2 case still runs its two ranks as worker processes. The child
marks where each case begins in its output, so each case is checked on its own lines. The API
server runs as a user starts it (its engine core and worker in processes of their own). Every
child has a timeout. Exit status 77 (skipped, reason printed) where .venv-vllm,
nginx or moto is missing (scripts/setup.sh makes them).
"""
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.realpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
VENV = os.path.join(REPO, ".venv-vllm")
PROMPTS = ["The quick brown fox", "ringload reads model weights", "Once upon a time"]
MAX_TOKENS = 12
GOOD_CASES_TIMEOUT_S = 900
SERVER_START_TIMEOUT_S = 300
FAILURE_TIMEOUT_S = 420
CASE_MARK = "=== vllm_test case: "  # the child's line before each case's output
failures = []


def error_lines(output, count=12):
    """The lines of a vLLM run that say what went wrong (its tracebacks are long)."""
    lines = [line for line in output.splitlines() if "Error" in line or "ringload" in line]
    return "\n".join(lines[-count:])


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)
    if not ok:
        failures.append(name)


# --- child: runs vLLM ----------------------------------------------------------------------
def run_cases(cases_path, out_path):
    """One LLM() per case, one after the other; what each gave (its tokens, or the error it
    raised, whose traceback is printed as a user sees it) is written as it ends. Exit status 0
    where every case went as expected (a failing case's LLM() raised, every other one generated)."""
    from vllm import LLM, SamplingParams
    params = SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS, ignore_eos=True)
    with open(cases_path) as file:
        cases = json.load(file)
    results, unexpected = {}, False
    for case in cases:
        print(CASE_MARK + case["name"], flush=True)
        started = time.monotonic()
        parallel = {}
        if case.get("tp", 1) > 1:  # one core per rank (vLLM's automatic binding refuses 2 ranks on 2 cores)
            os.environ["VLLM_CPU_OMP_THREADS_BIND"] = "|".join(str(r) for r in range(case["tp"]))
            parallel = {"tensor_parallel_size": case["tp"], "distributed_executor_backend": "mp"}
        else:
            os.environ.pop("VLLM_CPU_OMP_THREADS_BIND", None)
        llm = None
        try:
            llm = LLM(model=case["model"], load_format=case["load_format"], enforce_eager=True, max_model_len=128,
                      dtype="float32", seed=0, model_loader_extra_config=case.get("extra") or {}, **parallel)
            outputs = llm.generate(PROMPTS, params, use_tqdm=False)
            results[case["name"]] = {"tokens": [list(o.outputs[0].token_ids) for o in outputs],
                                     "text": [o.outputs[0].text for o in outputs],
                                     "seconds": round(time.monotonic() - started, 1)}
            unexpected |= bool(case.get("fails"))
        except Exception as error:  # the next case still runs
            traceback.print_exc()
            sys.stderr.flush()
            results[case["name"]] = {"error": str(error)}
            unexpected |= not case.get("fails")
        _write(out_path, results)
        _shut_down(llm)
    return 1 if unexpected else 0


def _write(path, results):
    with open(path, "w") as file:
        json.dump(results, file)


def _shut_down(llm):
    """Stops the engine core (and its workers) and undoes what it set up in this process (the
    distributed group, vLLM's cache of its environment variables, the frozen GC heap), so the
    next LLM() starts afresh; also after an LLM() that failed part way."""
    from vllm.distributed.parallel_state import cleanup_dist_env_and_memory
    core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    if core is not None and hasattr(core, "shutdown"):
        core.shutdown()
    del llm, core
    cleanup_dist_env_and_memory()
    os.environ.pop("VLLM_DIST_IDENT", None)  # the CPU worker's, set in this process (vLLM warns of it)
    gc.collect()


# --- parent: makes the files, starts the servers, checks ------------------------------------
def vllm_env(work, python_dir):
    env = dict(os.environ)
    env.update(VLLM_TARGET_DEVICE="cpu", VLLM_CPU_KVCACHE_SPACE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               VLLM_CACHE_ROOT=os.path.join(work, "cache", "vllm"), HF_HOME=os.path.join(work, "cache", "hf"),
               XDG_CACHE_HOME=os.path.join(work, "cache"), VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1",
               HOME=work, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_REGION="us-east-1",
               PYTHONPATH=python_dir)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "VLLM_PLUGINS"):
        env.pop(name, None)
    return env


def copy_model_files(source, folder):
    """config.json and the tokenizer of `source` (no weights) in a new folder."""
    os.makedirs(folder)
    for name in os.listdir(source):
        if name.endswith(".json") and name != "model.safetensors.index.json":
            shutil.copy(os.path.join(source, name), folder)
    return folder


def write_shards(state, folder):
    """Two safetensors shards and the index json that names them, as save_pretrained does."""
    from safetensors.torch import save_file
    names = list(state)
    halves = [names[:len(names) // 2], names[len(names) // 2:]]
    weight_map = {}
    for k, half in enumerate(halves):
        shard = f"model-{k + 1:05d}-of-00002.safetensors"
        save_file({n: state[n].contiguous() for n in half}, os.path.join(folder, shard), metadata={"format": "pt"})
        weight_map.update({n: shard for n in half})
    total = sum(t.numel() * t.element_size() for t in state.values())
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as file:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, file)


def convert(env, *args):
    out = subprocess.run([sys.executable, "-m", "ringload.vllm_convert", *args], env=env, capture_output=True,
                         text=True, timeout=300)
    check(f"vllm_convert {' '.join(os.path.basename(a) for a in args)}", out.returncode == 0, out.stderr)
    print("     " + out.stdout.strip(), flush=True)


def make_models(work, env):
    """Every folder and file the cases read; returns their paths."""
    import torch

    import ringload
    from tiny_llama import make_tiny_llama
    m = {"st1": os.path.join(work, "st1")}
    state = make_tiny_llama(m["st1"])
    for name in ("st2", "bin", "tz", "corrupt", "partial"):
        m[name] = copy_model_files(m["st1"], os.path.join(work, name))
    write_shards(state, m["st2"])
    # vLLM's own check (which the loader runs) exempts layers that post-process their weights
    # (on the CPU every linear layer and the LM head): a norm's weight is one it catches.
    ringload.save_file({n: t for n, t in state.items() if n != "model.norm.weight"},
                       os.path.join(m["partial"], "model.safetensors"))
    torch.save({n: t.contiguous() for n, t in state.items()}, os.path.join(m["bin"], "pytorch_model.bin"))
    m["key"], m["wrong_key"] = os.path.join(work, "key"), os.path.join(work, "wrong_key")
    for path, seed in ((m["key"], b"k"), (m["wrong_key"], b"w")):
        with open(path, "wb") as file:
            file.write(seed * 32)
    www = os.path.join(work, "www")
    os.makedirs(www)
    os.chmod(work, 0o711)  # nginx's workers (nobody, when the tests run as root) reach www through it
    convert(env, m["st2"], os.path.join(m["tz"], "model.tensors"))
    convert(env, m["st1"], os.path.join(work, "model.enc.tensors"), "--encrypt-key-file", m["key"])
    convert(env, m["bin"], os.path.join(www, "model.safetensors"), "--to", "safetensors")
    with open(os.path.join(m["st1"], "model.safetensors"), "rb") as file:
        data = file.read()
    with open(os.path.join(m["corrupt"], "model.safetensors"), "wb") as file:
        file.write(data[:len(data) // 2])  # cut in the middle of the tensors
    m["enc"], m["www"] = os.path.join(work, "model.enc.tensors"), www
    # vLLM's pre-sharded layout: written for one rank by the converter (which runs vLLM), for
    # two by the TP=2 save case into this folder, read by the cases after it.
    m["sharded1"] = os.path.join(work, "sharded1")
    convert(env, m["st1"], m["sharded1"], "--sharded", "1", "--dtype", "float32")
    m["sharded2"] = copy_model_files(m["st1"], os.path.join(work, "sharded2"))
    return m


def put_on_s3(s3_url, path, bucket, key):
    """Creates the bucket and uploads the file, unsigned (moto checks no signatures until told
    to; .venv-vllm has no boto3). Not urllib's form content type: Flask would swallow the body."""
    with open(path, "rb") as file:
        data = file.read()
    for url, body in ((f"{s3_url}/{bucket}", b""), (f"{s3_url}/{bucket}/{key}", data)):
        request = urllib.request.Request(url, data=body, method="PUT",
                                         headers={"Content-Type": "application/octet-stream"})
        urllib.request.urlopen(request, timeout=30).read()


def good_cases(m, http_url, s3_url):
    ringload = "ringload"
    return [
        {"name": "default loader (safetensors)", "model": m["st1"], "load_format": "auto"},
        {"name": "ringload safetensors", "model": m["st1"], "load_format": ringload},
        {"name": "ringload 2 safetensors shards + index", "model": m["st2"], "load_format": ringload},
        {"name": "ringload torch .bin", "model": m["bin"], "load_format": ringload},
        {"name": "ringload tensorizer in the folder", "model": m["tz"], "load_format": ringload,
         "extra": {"verify_hash": True}},
        {"name": "ringload encrypted tensorizer (key file)", "model": m["st1"], "load_format": ringload,
         "extra": {"uri": m["enc"], "key_file": m["key"], "verify_hash": True}},
        {"name": "ringload safetensors over HTTP (nginx)", "model": m["st1"], "load_format": ringload,
         "extra": {"uri": http_url + "/model.safetensors", "connections": 4}},
        {"name": "ringload tensorizer from S3 (moto)", "model": m["st1"], "load_format": ringload,
         "extra": {"uri": "s3://models/tiny/model.tensors", "s3_endpoint": s3_url}},
        # Two tensor-parallel ranks read the file once between them (issue #26): nginx's log
        # of this URL's ranges must add up to the file once, not twice (check_read_once).
        {"name": "ringload safetensors over HTTP, TP=2, read once", "model": m["st1"], "load_format": ringload,
         "extra": {"uri": http_url + "/" + TP_FILE, "connections": 2}, "tp": 2},
        # Parameters that take a whole tensor as stored backed by the file's pages; all copied in.
        {"name": "ringload safetensors, parameters mapped from the file", "model": m["st1"],
         "load_format": ringload, "extra": {"placement": "mapped"}},
        {"name": "ringload safetensors, every tensor copied into the parameters", "model": m["st1"],
         "load_format": ringload, "extra": {"placement": "arena"}},
        # The streamed path (what a GPU load takes): tensors handed to load_weights as they land.
        {"name": "ringload safetensors, streamed into load_weights", "model": m["st1"], "load_format": ringload,
         "extra": {"into_parameters": False}},
        # Each rank reads its own rows and columns straight into its parameters (read_once off).
        {"name": "ringload safetensors, TP=2, into each rank's parameters", "model": m["st1"],
         "load_format": ringload, "extra": {"read_once": False}, "tp": 2},
        # vLLM's pre-sharded layout: each rank's parameters in a file of its own, every one mapped.
        {"name": "ringload, TP=2, writing vLLM's pre-sharded layout", "model": m["st1"], "load_format": ringload,
         "extra": {"save_sharded_state": m["sharded2"]}, "tp": 2},
        {"name": "ringload, TP=2, the pre-sharded layout (each rank its own file)", "model": m["sharded2"],
         "load_format": ringload, "extra": {"placement": "mapped"}, "tp": 2, "sharded": True},
        {"name": "vLLM's sharded_state reads ringload's pre-sharded layout, TP=2", "model": m["sharded2"],
         "load_format": "sharded_state", "tp": 2},
        {"name": "ringload, the pre-sharded layout vllm_convert wrote", "model": m["sharded1"],
         "load_format": ringload, "extra": {"placement": "mapped"}, "sharded": True},
        # The node-local cache (issue #41): the first start fills it from nginx, the second
        # asks nginx only whether the file changed (check_cache).
        {"name": "ringload safetensors over HTTP, filling the node's cache", "model": m["st1"],
         "load_format": ringload, "extra": {"uri": http_url + "/" + CACHE_FILE, "cache": m["cache"]}},
        {"name": "ringload safetensors over HTTP, from the node's cache", "model": m["st1"],
         "load_format": ringload, "extra": {"uri": http_url + "/" + CACHE_FILE, "cache": m["cache"]}},
    ]


TP_FILE = "model-tp.safetensors"
CACHE_FILE = "model-cache.safetensors"


def check_cache(nginx, www, cache_dir):
    """The two cache cases from nginx's log and the cache folder: the file's bytes were served
    once (the first start's ranges, and its open's read of the head), the second start's only
    request was the HEAD that checks
    the version (no Range, status 200), and the cache holds an entry of the file's size."""
    size = os.path.getsize(os.path.join(www, CACHE_FILE))
    requests = [r for r in nginx.requests() if r[0] == "/" + CACHE_FILE]
    served = 0
    for _, range_header, status in requests:
        if status == "206" and range_header.startswith("bytes="):
            first, last = range_header[len("bytes="):].split("-")
            served += int(last) - int(first) + 1
    # Once: the first start's open reads the head (64 KiB) and its load the file; nothing after.
    check("cache: two starts read the file from nginx once between them", size <= served <= size + (64 << 10),
          f"{served} bytes of ranges for a file of {size}: {requests}")
    check("cache: the second start asked nginx only whether the file changed (one HEAD, no range)",
          bool(requests) and requests[-1][1] == "-" and requests[-1][2] == "200", str(requests[-3:]))
    entries = [os.path.join(cache_dir, e, "data") for e in os.listdir(cache_dir)] if os.path.isdir(cache_dir) else []
    check("cache: the node's cache holds the whole file", [os.path.getsize(e) for e in entries] == [size],
          str(entries))


def check_read_once(nginx, www):
    """The TP=2 case's ranges from nginx's log: every byte of the tensors' data once, plus
    what each rank reads to open the file (its first 64 KiB or the header, whichever is more);
    each rank reading it all would be twice the tensors."""
    size = os.path.getsize(os.path.join(www, TP_FILE))
    total = 0
    for uri, range_header, status in nginx.requests():
        if uri != "/" + TP_FILE or status != "206" or not range_header.startswith("bytes="):
            continue
        first, last = range_header[len("bytes="):].split("-")
        total += int(last) - int(first) + 1
    with open(os.path.join(www, TP_FILE), "rb") as f:
        header = 8 + int.from_bytes(f.read(8), "little")
    opening = max(header, 64 << 10)
    check("TP=2: the two ranks read the file's tensors once between them",
          size - header <= total <= size + 2 * opening,
          f"nginx served {total} bytes of ranges for a file of {size} ({size - header} of tensors)")


def run_child(work, env, cases):
    """Runs every case in one child (the engine core in that process); returns what each gave
    and each case's own lines of the child's output (stdout and stderr, in order)."""
    cases_path, out_path = os.path.join(work, "cases.json"), os.path.join(work, "results.json")
    log_path = os.path.join(work, "child.log")
    with open(cases_path, "w") as file:
        json.dump(cases, file)
    env = dict(env, VLLM_ENABLE_V1_MULTIPROCESSING="0")
    timeout = GOOD_CASES_TIMEOUT_S + FAILURE_TIMEOUT_S
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, __file__, "--child", cases_path, out_path], env=env,
                                   stdout=log, stderr=subprocess.STDOUT)
    try:
        process.wait(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        from processes import stop_process
        stop_process(process)
        timed_out = True
    with open(log_path, errors="replace") as file:
        output = file.read()
    sections, results = split_cases(output), {}
    if os.path.exists(out_path):
        with open(out_path) as file:
            results = json.load(file)
    if timed_out:
        check("the LLM() child ends in time", False, f"still running after {timeout} s, in the case "
              f"{next(reversed(sections), None)!r}: {error_lines(output)}")
    else:
        unexpected = [c["name"] for c in cases
                      if c["name"] not in results or ("error" in results[c["name"]]) != bool(c.get("fails"))]
        check("the LLM() child ends well (every case as expected)", process.returncode == 0,
              f"not as expected: {unexpected}\n{error_lines(output)}")
    print(f"     {len(cases)} LLM() in {time.monotonic() - started:.0f} s", flush=True)
    return results, sections


def split_cases(output):
    """{case name: its lines of the child's output}, from the mark the child prints before each."""
    sections, current = {}, None
    for line in output.splitlines():
        if line.startswith(CASE_MARK):
            current = line[len(CASE_MARK):]
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return {name: "\n".join(lines) for name, lines in sections.items()}


def check_tokens(results, cases):
    reference = results.get(cases[0]["name"], {})
    check("the default loader's tokens", all(reference.get("tokens") or [[]]), reference)
    if "tokens" not in reference:
        return None
    print(f"     default loader: {reference['tokens'][0]} ({reference['seconds']} s)", flush=True)
    for case in cases[1:]:
        got = results.get(case["name"], {"error": "not run"})
        check(f"{case['name']}: the default loader's tokens", got.get("tokens") == reference["tokens"], got)
        if "seconds" in got:
            print(f"     ({got['seconds']} s)", flush=True)
    return reference


def check_loaded_by_ringload(sections, cases):
    """The plugin is what loaded (vLLM found it through the entry point in the child and in the
    TP=2 case's workers): the loader's line in each ringload case's output, none in the default's."""
    for case in cases:
        lines = [line for line in sections.get(case["name"], "").splitlines() if "ringload: weights from" in line]
        by_ringload = case["load_format"] == "ringload"
        check(f"{case['name']}: {'loaded by ringload' if by_ringload else 'not loaded by ringload'}",
              bool(lines) == by_ringload, lines or error_lines(sections.get(case["name"], "not run")))


INTO_PARAMETERS = "read straight into the parameters"


def check_into_parameters(sections, cases):
    """On the CPU every tensor of the tiny Llama goes straight into its parameters (vLLM's Llama
    loaders only narrow and copy; with TP=2 reading once, what the ranks do not split by rows is
    read by one and shared): the loader's report on each rank says so, with nothing handed over;
    with the streamed path ("into_parameters": false) there is no such report."""
    for case in cases:
        if case["load_format"] != "ringload" or case.get("fails"):
            continue
        lines = [line for line in sections.get(case["name"], "").splitlines() if INTO_PARAMETERS in line]
        if (case.get("extra") or {}).get("into_parameters") is False:
            check(f"{case['name']}: streamed, not into the parameters", not lines, lines)
            continue
        if case.get("tp", 1) > 1 and (case.get("extra") or {}).get("read_once", True) and not case.get("sharded"):
            check(f"{case['name']}: read once, the rest shared over the group", all(
                "shared over the group" in line for line in lines) and len(lines) == case["tp"], lines)
        handed_nothing = [line for line in lines if "0.0 MB of 0 handed" in line]
        check(f"{case['name']}: every tensor read straight into the parameters", len(handed_nothing) == len(lines)
              and len(lines) == case.get("tp", 1), lines or error_lines(sections.get(case["name"], "not run")))
        placement = (case.get("extra") or {}).get("placement")
        mapped = [line for line in lines if "mapped from the file's pages" in line]
        if placement == "mapped":
            check(f"{case['name']}: whole tensors mapped from the file's pages", len(mapped) == len(lines) > 0, lines)
        if case.get("sharded"):  # every parameter is one stretch of its rank's file: nothing copied
            check(f"{case['name']}: every parameter mapped, nothing copied",
                  all(" 0.0 MB of 0 tensors read straight" in line for line in lines) and len(lines) > 0, lines)
        elif placement == "arena":
            check(f"{case['name']}: nothing mapped", not mapped, lines)


def start_server(env, model, extra, log_path):
    from processes import free_port
    port = free_port()
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--host", "127.0.0.1",
               "--port", str(port), "--load-format", "ringload", "--enforce-eager", "--max-model-len", "128",
               "--dtype", "float32", "--seed", "0"]
    if extra:
        command += ["--model-loader-extra-config", json.dumps(extra)]
    log = open(log_path, "wb")
    return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT), port, log


def wait_healthy(process, port):
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).read()
            return True
        except OSError:
            time.sleep(1)
    return False


def complete(port, model):
    body = json.dumps({"model": model, "prompt": PROMPTS[0], "max_tokens": MAX_TOKENS, "temperature": 0,
                       "ignore_eos": True, "return_token_ids": True}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(request, timeout=120).read())["choices"][0]


def check_server(work, env, m, reference):
    """The OpenAI-compatible server with --load-format ringload (2 shards) answers with the
    default loader's tokens."""
    from processes import stop_process
    started = time.monotonic()
    process, port, log = start_server(env, m["st2"], {"verify_hash": False}, os.path.join(work, "server.log"))
    try:
        healthy = wait_healthy(process, port)
        with open(os.path.join(work, "server.log"), errors="replace") as file:
            check("api_server --load-format ringload starts", healthy, error_lines(file.read()))
        if healthy and reference is not None:
            print(f"     healthy after {time.monotonic() - started:.0f} s", flush=True)
            choice = complete(port, m["st2"])
            check("api_server: the default loader's tokens", choice.get("token_ids") == reference["tokens"][0]
                  and choice["text"] == reference["text"][0], choice)
    finally:
        stop_process(process)
        log.close()


def failure_cases(m):
    """Cases whose LLM() must fail, each with what its message must name."""
    missing = os.path.join(m["www"], "no-such-model.safetensors")
    fails = [
        ("a checkpoint without model.norm.weight", m["partial"], None, "model.norm.weight"),
        ("a corrupt (cut) safetensors file", m["corrupt"], None, os.path.join(m["corrupt"], "model.safetensors")),
        ("a missing weights file", m["st1"], {"uri": missing}, missing),
        ("a wrong key", m["st1"], {"uri": m["enc"], "key_file": m["wrong_key"]}, m["enc"]),
        ("an unknown option", m["st1"], {"connection": 4}, "'connection'"),
    ]
    return [{"name": name, "model": model, "load_format": "ringload", "extra": extra, "fails": True, "names": named}
            for name, model, extra, named in fails]


def check_failures(results, sections, cases):
    """Each failing start failed (its LLM() raised), and its output (the traceback a user sees)
    says why, naming the file, weight or option."""
    for case in cases:
        name, named = case["name"], case["names"]
        output = sections.get(name)
        if output is None:
            check(f"{name}: the start fails, naming {named}", False, "not run")
            continue
        lines = [line for line in output.splitlines() if "ringload" in line and named in line]
        error = results.get(name, {}).get("error", "")  # what LLM() raised (its engine core is in the child)
        check(f"{name}: the start fails, naming {named}", named in error and lines, error_lines(output))
        if lines:
            print("     " + lines[-1].strip()[:400], flush=True)


def run_all(work, python_dir):
    from nginx import Nginx
    from s3_server import MotoServer
    env = vllm_env(work, python_dir)
    m = make_models(work, env)
    for name in (TP_FILE, CACHE_FILE):
        shutil.copy(os.path.join(m["www"], "model.safetensors"), os.path.join(m["www"], name))
        os.chmod(os.path.join(m["www"], name), 0o644)
    m["cache"] = os.path.join(work, "node-cache")
    with Nginx(m["www"], access_log=True) as nginx, MotoServer() as s3:
        put_on_s3(s3.url, os.path.join(m["tz"], "model.tensors"), "models", "tiny/model.tensors")
        cases, fails = good_cases(m, nginx.http_url, s3.url), failure_cases(m)
        results, sections = run_child(work, env, cases + fails)
        reference = check_tokens(results, cases)
        check_loaded_by_ringload(sections, cases)
        check_into_parameters(sections, cases)
        check_read_once(nginx, m["www"])
        check_cache(nginx, m["www"], m["cache"])
        check_failures(results, sections, fails)
    check_server(work, env, m, reference)


def skip_reason(python_dir):
    if not os.path.isdir(python_dir):
        return f"no Python package build in {python_dir}"
    for binary, what in (("nginx", "nginx"), ("openssl", "openssl")):
        if shutil.which(binary) is None and not os.path.exists("/usr/sbin/" + binary):
            return f"{what} is not installed (scripts/setup.sh installs it)"
    from s3_server import moto_python
    if moto_python() is None:
        return "moto is not installed (scripts/setup.sh puts it in .venv-moto)"
    return None


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        return run_cases(sys.argv[2], sys.argv[3])
    if not os.path.exists(os.path.join(VENV, "bin", "python")):
        print(f"skipped: {VENV} is missing (scripts/setup.sh makes it with scripts/setup_vllm.sh)")
        return 77
    if os.path.realpath(sys.prefix) != os.path.realpath(VENV):  # run by any python: go on in .venv-vllm's
        python = os.path.join(VENV, "bin", "python")
        os.execv(python, [python, os.path.abspath(__file__), *sys.argv[1:]])
    python_dir = os.path.abspath(sys.argv[1])
    reason = skip_reason(python_dir)
    if reason:
        print("skipped: " + reason)
        return 77
    sys.path.insert(0, python_dir)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ringload-vllm-") as work:
        run_all(work, python_dir)
    print(f"{'FAILED: ' + ', '.join(failures) if failures else 'all passed'} ({time.monotonic() - started:.0f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
