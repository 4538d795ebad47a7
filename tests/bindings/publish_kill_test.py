#!/usr/bin/env python3
"""tests/bindings/publish_kill_test.py RINGLOAD [TRIALS]: kill -9 during S3 uploads and Redis publishes (issue #27, part 3).

`ringload convert` of a 40 MiB file to s3:// (a multipart upload of 5 MiB parts, on a real
S3-compatible server: moto) and to redis:// (a real redis-server), killed with SIGKILL at a
random moment of its run (uniform over an uninterrupted run's median time, seeded). After every kill
the object (the keys under the prefix) is either absent or whole: it loads with the source's
bytes. What a kill leaves behind is cleaned up: S3's unfinished multipart uploads of the key
are aborted by the next successful upload of it (0 left), the local staging files of killed
processes are removed by the next upload (0 left in its TMPDIR), and Redis's temporary keys
carry an expiry (no key is left for ever; the keys put in place carry none). Prints the figures.
Exits 77 where moto, redis-server, boto3 or redis-py is missing.
"""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402
from kill_sources import loaded_sha256, write_varied_safetensors  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from s3_server import MotoServer  # noqa: E402

RINGLOAD = sys.argv[1]
TRIALS = int(sys.argv[2]) if len(sys.argv) > 2 else 8
checks = Checks()
check = checks.check
try:
    import boto3  # noqa: F401
    import redis  # noqa: F401
except ImportError as error:
    print(f"SKIP: {error}: scripts/setup.sh installs boto3 and redis in .venv")
    sys.exit(77)


def killed_runs(label, command, env, rng, after_kill):
    """An uninterrupted run, then TRIALS runs killed at random moments; after_kill(trial) checks each."""
    runs = []
    for _ in range(3):  # the median of three: the first run meets cold caches
        started = time.monotonic()
        out = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
        runs.append(time.monotonic() - started)
        check(f"{label}: an uninterrupted run succeeds", out.returncode == 0, out.stderr[-300:])
    whole_run = sorted(runs)[1]
    outcomes = {"absent": 0, "whole": 0}
    for trial in range(TRIALS):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        time.sleep(rng.uniform(0.0, whole_run))
        process.send_signal(signal.SIGKILL)
        process.wait()
        outcomes[after_kill(trial)] += 1
    print(f"{label}: {TRIALS} kills over a {whole_run:.2f} s run: {outcomes['absent']} left it absent "
          f"(or as before), {outcomes['whole']} whole, 0 partial")


with tempfile.TemporaryDirectory() as tmp:
    rng = random.Random(2727)  # when each kill comes
    source = os.path.join(tmp, "source.safetensors")
    write_varied_safetensors(source, count=5, mib_each=8, seed=2727)
    tensors = os.path.join(tmp, "source.tensors")  # redis:// holds tensorizer's layout
    subprocess.run([RINGLOAD, "convert", source, tensors], check=True, capture_output=True, timeout=120)
    expected, why = loaded_sha256(RINGLOAD, source)
    if expected is None:
        sys.exit(f"FAIL: the source does not load: {why}")
    staging = os.path.join(tmp, "staging")  # the uploads' TMPDIR, to count what kills leave there
    os.mkdir(staging)
    home = os.path.join(tmp, "home")
    os.mkdir(home)

    try:
        s3 = MotoServer()
        redis_server = RedisServer()
    except RuntimeError as error:
        print(f"SKIP: {error}")
        sys.exit(77)

    with s3:
        admin = s3.client()
        admin.create_bucket(Bucket="models")
        key_id, secret = s3.create_user()
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(HOME=home, TMPDIR=staging, AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=secret)
        uri = "s3://models/gpt/model.tensors"
        s3_args = ["--s3-endpoint", s3.url]
        upload = [RINGLOAD, "convert", tensors, uri, "--range-size", str(5 << 20), *s3_args]

        def s3_after_kill(trial):
            listed = admin.list_objects_v2(Bucket="models", Prefix="gpt/").get("Contents", [])
            if not listed:
                return "absent"
            got, why = loaded_sha256(RINGLOAD, uri, *s3_args, env=env)
            check(f"s3 kill {trial}: the object is whole", got == expected, why or "bytes differ")
            admin.delete_object(Bucket="models", Key="gpt/model.tensors")
            return "whole"

        killed_runs("convert to s3:// (8 parts of 5 MiB)", upload, env, rng, s3_after_kill)
        pending = admin.list_multipart_uploads(Bucket="models").get("Uploads", [])
        left_staging = os.listdir(staging)
        print(f"after the kills: {len(pending)} unfinished multipart uploads, {len(left_staging)} staging files")
        out = subprocess.run(upload, capture_output=True, text=True, timeout=300, env=env)
        check("s3: the next upload succeeds", out.returncode == 0, out.stderr[-300:])
        print(f"  the next upload: {out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr}")
        pending = admin.list_multipart_uploads(Bucket="models").get("Uploads", [])
        check("s3: no unfinished multipart upload is left after the next upload", pending == [],
              f"{len(pending)} left: {pending[:2]}")
        check("s3: no staging file is left after the next upload", os.listdir(staging) == [],
              str(os.listdir(staging)))
        got, why = loaded_sha256(RINGLOAD, uri, *s3_args, env=env)
        check("s3: the next upload's object is whole", got == expected, why)

    with redis_server:
        client = redis_server.client()
        uri = redis_server.uri + "/gpt"
        publish = [RINGLOAD, "convert", tensors, uri]

        def redis_after_kill(trial):
            if not client.keys("gpt:*"):
                return "absent"
            got, why = loaded_sha256(RINGLOAD, uri, env=env)
            check(f"redis kill {trial}: the keys are whole", got == expected, why or "bytes differ")
            client.delete(*client.keys("gpt:*"))
            return "whole"

        killed_runs("convert to redis://", publish, env, rng, redis_after_kill)
        temporary = client.keys("gpt.ringload-tmp-*")
        lasting = [k for k in temporary if client.pttl(k) < 0]
        print(f"after the kills: {len(temporary)} temporary keys, {len(lasting)} of them without an expiry")
        check("redis: every temporary key a kill left expires", lasting == [], str(lasting[:3]))
        out = subprocess.run(publish, capture_output=True, text=True, timeout=300, env=env)
        check("redis: the next publish succeeds", out.returncode == 0, out.stderr[-300:])
        placed = client.keys("gpt:*")
        check("redis: the keys put in place do not expire", placed and all(client.pttl(k) == -1 for k in placed),
              str([(k, client.pttl(k)) for k in placed[:3]]))
        got, why = loaded_sha256(RINGLOAD, uri, env=env)
        check("redis: the next publish's keys are whole", got == expected, why)

sys.exit(checks.finish())
