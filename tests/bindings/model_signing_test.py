#!/usr/bin/env python3
"""tests/bindings/model_signing_test.py: OpenSSF Model Signing signatures against the real
model-signing 1.1 (issue #40), both ways.

    model_signing_test.py RINGLOAD MODEL_SIGNING DATA

A model folder holds a tensorizer fixture, a torch.save zip, a safetensors model in two shards,
a config and a tokenizer in a subfolder (and a .gitignore, left out as model_signing leaves it
out). Signed by model_signing (key method with P-256 and P-384 keys, certificate method with a
CA's chain, shard mode through its library), `ringload verify` accepts each; signed by `ringload
sign`, `model_signing verify key` accepts it. Then every tamper fails `ringload verify` with a
message naming what is wrong: a flipped byte in each file, a missing, an extra and a renamed
file, a statement for another model, a wrong key, an untrusted, an expired and a non-signing
certificate, a truncated bundle and hostile ones (not JSON, another mediaType, two signatures, a
changed statement, a keyless bundle). Keys and certificates are made here (cryptography).
"""
import base64
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402

RINGLOAD, MODEL_SIGNING, DATA = sys.argv[1:4]
SIGNING_PYTHON = os.path.join(os.path.dirname(MODEL_SIGNING), "python")
checks = Checks()
check = checks.check
NOW = datetime.datetime.now(datetime.timezone.utc)


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=300)


def ringload(*args):
    return run(RINGLOAD, *args)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as file:
        file.write(data)


def make_model(folder):
    shutil.copy(os.path.join(DATA, "tensorizer", "basic_v1.tensors"), os.path.join(folder, "model.tensors"))
    shutil.copy(os.path.join(DATA, "torch", "checkpoint_misc.pt"), os.path.join(folder, "weights.pt"))
    for shard in (1, 2):
        out = ringload("convert", os.path.join(DATA, "tensorizer", "large_mixed_v2.tensors"),
                       os.path.join(folder, f"model-0000{shard}-of-00002.safetensors"))
        assert out.returncode == 0, out.stderr
    write(os.path.join(folder, "config.json"), b'{"model_type": "llama"}\n')
    write(os.path.join(folder, "tokenizer", "tokenizer.json"), b'{"vocab": {}}\n')
    write(os.path.join(folder, ".gitignore"), b"*.tmp\n")


def key_pair(folder, name, curve):
    key = ec.generate_private_key(curve)
    write(os.path.join(folder, name + ".key"), key.private_bytes(serialization.Encoding.PEM,
                                                                  serialization.PrivateFormat.PKCS8,
                                                                  serialization.NoEncryption()))
    write(os.path.join(folder, name + ".pub"), key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return key


def certificate(subject, key, issuer, issuer_key, ca, days=(-1, 30), signing=True):
    builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(NOW + datetime.timedelta(days=days[0]))
               .not_valid_after(NOW + datetime.timedelta(days=days[1]))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                                        critical=True)
    elif signing:
        builder = builder.add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False),
                                        critical=True)
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
    else:
        builder = builder.add_extension(x509.KeyUsage(False, False, True, False, False, False, False, False, False),
                                        critical=True)
    return builder.sign(issuer_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def make_pki(folder):
    ca_key = key_pair(folder, "ca", ec.SECP256R1())
    write(os.path.join(folder, "ca.pem"), certificate("ringload test CA", ca_key, "ringload test CA", ca_key, True))
    other_key = key_pair(folder, "other-ca", ec.SECP256R1())
    write(os.path.join(folder, "other-ca.pem"), certificate("another CA", other_key, "another CA", other_key, True))
    leaf_key = key_pair(folder, "leaf", ec.SECP384R1())
    for name, days, signing in (("leaf", (-1, 30), True), ("expired", (-30, -1), True), ("no-signing", (-1, 30), False)):
        write(os.path.join(folder, name + ".pem"),
              certificate(name, leaf_key, "ringload test CA", ca_key, False, days, signing))


def model_signing_sign(model, signature, *method_args):
    return run(MODEL_SIGNING, "sign", *method_args, model, "--signature", signature)


def verify(model, signature, *trust):
    return ringload("verify", model, "--signature", signature, *trust)


def one_line_naming(out, *words):
    text = out.stderr.strip()
    return out.returncode != 0 and text.count("\n") == 0 and all(word in text for word in words)


def shard_sign(model, signature, key, shard_size):
    code = ("import sys, model_signing\n"
            "hashing = model_signing.hashing.Config().use_shard_serialization(shard_size=int(sys.argv[4]))\n"
            "model_signing.signing.Config().use_elliptic_key_signer(private_key=sys.argv[3])"
            ".set_hashing_config(hashing).sign(sys.argv[1], sys.argv[2])\n")
    return run(SIGNING_PYTHON, "-c", code, model, signature, key, str(shard_size))


def rewritten(signature, target, change):
    """A copy of the bundle at `target` with `change(bundle_dict)` applied."""
    with open(signature) as file:
        bundle = json.load(file)
    change(bundle)
    with open(target, "w") as file:
        json.dump(bundle, file)
    return target


def statement_of(bundle):
    return json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))


def with_statement(bundle, statement):
    bundle["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()


def interop(tmp, model, keys):
    sigs = os.path.join(tmp, "sigs")
    os.makedirs(sigs)
    for curve in ("p256", "p384"):
        sig = os.path.join(sigs, f"theirs-{curve}.sig")
        out = model_signing_sign(model, sig, "key", "--private_key", os.path.join(keys, curve + ".key"))
        check(f"model_signing signs ({curve})", out.returncode == 0, out.stderr[-2000:])
        out = verify(model, sig, "--public-key", os.path.join(keys, curve + ".pub"))
        check(f"ringload verifies model_signing's {curve} key signature", out.returncode == 0, out.stderr)
    sig = os.path.join(sigs, "theirs-cert.sig")
    out = model_signing_sign(model, sig, "certificate", "--private_key", os.path.join(keys, "leaf.key"),
                             "--signing_certificate", os.path.join(keys, "leaf.pem"),
                             "--certificate_chain", os.path.join(keys, "ca.pem"))
    check("model_signing signs with a certificate", out.returncode == 0, out.stderr[-2000:])
    out = verify(model, sig, "--certificate-chain", os.path.join(keys, "ca.pem"))
    check("ringload verifies model_signing's certificate signature", out.returncode == 0, out.stderr)
    sig = os.path.join(sigs, "theirs-shards.sig")
    out = shard_sign(model, sig, os.path.join(keys, "p256.key"), 1 << 16)
    check("model_signing's library signs shards", out.returncode == 0, out.stderr[-2000:])
    out = verify(model, sig, "--public-key", os.path.join(keys, "p256.pub"), "--json")
    check("ringload verifies model_signing's shard signature",
          out.returncode == 0 and json.loads(out.stdout)["sharded"] and json.loads(out.stdout)["resources"] > 8,
          out.stderr + out.stdout)
    for curve in ("p256", "p384"):
        sig = os.path.join(sigs, f"ours-{curve}.sig")
        out = ringload("sign", model, "--sign-key", os.path.join(keys, curve + ".key"), "--signature", sig)
        check(f"ringload signs ({curve})", out.returncode == 0, out.stderr)
        out = run(MODEL_SIGNING, "verify", "key", model, "--signature", sig, "--public_key",
                  os.path.join(keys, curve + ".pub"))
        check(f"model_signing verifies ringload's {curve} signature", out.returncode == 0, out.stderr[-2000:])
    for target in ("converted.safetensors", "converted.tensors", "converted.pt"):
        converted = os.path.join(tmp, target)
        out = ringload("convert", os.path.join(model, "model.tensors"), converted, "--sign-key",
                       os.path.join(keys, "p384.key"))
        theirs = run(MODEL_SIGNING, "verify", "key", converted, "--signature", converted + ".sig", "--public_key",
                     os.path.join(keys, "p384.pub"))
        check(f"convert --sign-key ({target}): model_signing verifies the output's signature",
              out.returncode == 0 and theirs.returncode == 0, out.stderr + theirs.stderr[-2000:])
    check("convert --sign-key to safetensors signs the hash computed while writing",
          "hashed while writing" in ringload("convert", os.path.join(model, "model.tensors"),
                                             os.path.join(tmp, "again.safetensors"), "--sign-key",
                                             os.path.join(keys, "p256.key")).stdout)
    bad_key = os.path.join(tmp, "not-a-key.pem")
    write(bad_key, b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    target = os.path.join(tmp, "never.safetensors")
    out = ringload("convert", os.path.join(model, "model.tensors"), target, "--sign-key", bad_key)
    check("convert --sign-key with a bad key fails before writing anything",
          one_line_naming(out, "not-a-key.pem") and not os.path.exists(target) and not os.path.exists(target + ".sig"),
          out.stderr)
    return sigs


def signed_load(model, signature, *trust):
    return ringload("load", model, "--signature", signature, *trust, "--json")


def file_tampers(tmp, model, sig, pub):
    names = sorted(os.path.relpath(os.path.join(root, name), model) for root, _, files in os.walk(model)
                   for name in files if name != ".gitignore")
    for name in names:
        copy = os.path.join(tmp, "tampered")
        shutil.copytree(model, copy)
        path = os.path.join(copy, name)
        with open(path, "r+b") as file:
            size = os.path.getsize(path)
            file.seek(size // 2)
            byte = file.read(1)
            file.seek(size // 2)
            file.write(bytes([byte[0] ^ 1]))
        out = verify(copy, sig, "--public-key", pub)
        check(f"a flipped byte in {name} fails naming it", one_line_naming(out, "hash mismatch", name), out.stderr)
        out = signed_load(copy, sig, "--public-key", pub)
        check(f"a signed load with a flipped byte in {name} fails naming it",
              one_line_naming(out, "hash mismatch", name) and out.stdout == "", out.stderr + out.stdout)
        shutil.rmtree(copy)
    copy = os.path.join(tmp, "tampered")
    shutil.copytree(model, copy)
    os.remove(os.path.join(copy, "weights.pt"))
    out = verify(copy, sig, "--public-key", pub)
    check("a missing file fails naming it", one_line_naming(out, "weights.pt", "missing"), out.stderr)
    out = signed_load(copy, sig, "--public-key", pub)
    check("a signed load of a folder missing a file fails before reading",
          one_line_naming(out, "weights.pt", "missing"), out.stderr)
    write(os.path.join(copy, "weights.pt.renamed"), open(os.path.join(model, "weights.pt"), "rb").read())
    out = verify(copy, sig, "--public-key", pub)
    check("a renamed file fails naming it", one_line_naming(out, "weights.pt.renamed", "not in the signed"), out.stderr)
    shutil.copy(os.path.join(model, "weights.pt"), os.path.join(copy, "weights.pt"))
    out = verify(copy, sig, "--public-key", pub)
    check("an extra file fails naming it", one_line_naming(out, "weights.pt.renamed", "extra"), out.stderr)
    out = signed_load(copy, sig, "--public-key", pub)
    check("a signed load of a folder with an extra file fails", one_line_naming(out, "weights.pt.renamed", "extra"),
          out.stderr)
    shutil.rmtree(copy)
    out = verify(copy if os.path.exists(copy) else os.path.join(tmp, "no-such-model"), sig, "--public-key", pub)
    check("a model that is not there fails naming it", one_line_naming(out, "no-such-model"), out.stderr)


def trust_tampers(tmp, model, sigs, keys):
    pub = os.path.join(keys, "p256.pub")
    ours = os.path.join(sigs, "ours-p256.sig")
    out = verify(model, ours, "--public-key", os.path.join(keys, "p384.pub"))
    check("a wrong key fails", one_line_naming(out, "signature invalid", "another key"), out.stderr)
    other = os.path.join(tmp, "other-model")
    os.makedirs(other)
    write(os.path.join(other, "model.safetensors"), b"not this model")
    other_sig = os.path.join(sigs, "other.sig")
    ringload("sign", other, "--sign-key", os.path.join(keys, "p256.key"), "--signature", other_sig)
    out = verify(model, other_sig, "--public-key", pub)
    check("a statement for another model fails", one_line_naming(out, "signature invalid"), out.stderr)
    out = verify(model, os.path.join(sigs, "theirs-cert.sig"), "--certificate-chain", os.path.join(keys, "other-ca.pem"))
    check("an untrusted certificate fails", one_line_naming(out, "not trusted"), out.stderr)
    for name, why in (("expired", "expired"), ("no-signing", "not for signing")):
        sig = os.path.join(sigs, f"{name}.sig")
        made = model_signing_sign(model, sig, "certificate", "--private_key", os.path.join(keys, "leaf.key"),
                                  "--signing_certificate", os.path.join(keys, name + ".pem"),
                                  "--certificate_chain", os.path.join(keys, "ca.pem"))
        out = verify(model, sig, "--certificate-chain", os.path.join(keys, "ca.pem"))
        check(f"a certificate {why} fails", made.returncode == 0 and one_line_naming(out, why), made.stderr + out.stderr)
    out = verify(model, os.path.join(sigs, "theirs-cert.sig"), "--public-key", pub)
    check("a certificate signature without the chain to trust says what to give",
          one_line_naming(out, "--certificate-chain"), out.stderr)


def hostile_bundles(tmp, model, sigs, keys):
    pub = os.path.join(keys, "p256.pub")
    ours = os.path.join(sigs, "ours-p256.sig")
    text = open(ours, "rb").read()
    cases = {"truncated": text[:len(text) // 2], "not JSON": b"\x00\xff" * 100, "empty": b"",
             "deep": b"[" * 100000 + b"]" * 100000}
    for name, data in cases.items():
        path = os.path.join(tmp, "hostile.sig")
        write(path, data)
        out = verify(model, path, "--public-key", pub)
        check(f"a {name} bundle is refused", one_line_naming(out, "hostile.sig"), out.stderr)

    def media_type(bundle):
        bundle["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.3"

    def two_signatures(bundle):
        bundle["dsseEnvelope"]["signatures"] *= 2

    def changed_digest(bundle):
        statement = statement_of(bundle)
        statement["predicate"]["resources"][0]["digest"] = "00" * 32
        with_statement(bundle, statement)

    def keyless(bundle):
        bundle["verificationMaterial"] = {"certificate": {"rawBytes": base64.b64encode(b"x").decode()},
                                          "tlogEntries": []}

    for name, change, words in (("another mediaType", media_type, ["mediaType"]),
                                ("two signatures", two_signatures, ["exactly one signature"]),
                                ("a changed statement", changed_digest, ["does not verify"]),
                                ("a keyless bundle", keyless, ["keyless"])):
        path = rewritten(ours, os.path.join(tmp, "changed.sig"), change)
        out = verify(model, path, "--public-key", pub)
        check(f"{name} is refused", one_line_naming(out, "changed.sig", *words), out.stderr)
    huge = os.path.join(tmp, "huge.sig")
    write(huge, b" " * (17 << 20))
    out = verify(model, huge, "--public-key", pub)
    check("a 17 MiB bundle is refused", one_line_naming(out, "too large"), out.stderr)


def flipped_copy(tmp, model, name, offset_from_end):
    """A copy of the model with one byte of `name` flipped, `offset_from_end` bytes before its end."""
    copy = os.path.join(tmp, "flipped")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(model, copy)
    path = os.path.join(copy, name)
    data = bytearray(open(path, "rb").read())
    data[len(data) - offset_from_end] ^= 1
    write(path, bytes(data))
    return copy


def loads_verify(tmp, model, sigs, keys):
    """`ringload load --signature`: the weights verified in their own read, the other files after."""
    pub = os.path.join(keys, "p256.pub")
    for sig, trust in (("theirs-p256.sig", ["--public-key", pub]), ("theirs-shards.sig", ["--public-key", pub]),
                       ("theirs-cert.sig", ["--certificate-chain", os.path.join(keys, "ca.pem")])):
        out = signed_load(model, os.path.join(sigs, sig), *trust)
        report = json.loads(out.stdout) if out.returncode == 0 else {}
        # The folder's weight files by find_weight_files' rule (the first layout: the two
        # safetensors shards) in their read; the other four (model.tensors, weights.pt, the config
        # and the tokenizer) hashed after.
        check(f"ringload load verifies while loading ({sig})",
              [os.path.basename(f["path"]) for f in report.get("files", [])] ==
              ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"] and
              report["signature"]["other_files"] == 4, out.stderr + out.stdout)
    plain = json.loads(ringload("load", model, "--json").stdout)
    check("a signed load loads what an unsigned load loads",
          [(f["path"], f["bytes"], f["tensors"]) for f in plain["files"]] ==
          [(f["path"], f["bytes"], f["tensors"]) for f in report["files"]], plain)
    shard = os.path.join(model, "model-00001-of-00002.safetensors")
    out = signed_load(shard, os.path.join(sigs, "theirs-p256.sig"), "--public-key", pub)
    check("one file of a signed folder loads verified", out.returncode == 0, out.stderr)
    # The last tensor changed, the load asks only for the first: the whole file is still hashed.
    copy = flipped_copy(tmp, model, "model-00001-of-00002.safetensors", 2)
    first = json.loads(ringload("load", shard, "--json").stdout)["tensors"][0]["name"]
    for sig in ("theirs-p256.sig", "theirs-shards.sig"):
        out = ringload("load", os.path.join(copy, "model-00001-of-00002.safetensors"), "--filter",
                       "^" + first.replace(".", r"\.") + "$", "--signature", os.path.join(sigs, sig), "--public-key",
                       pub)
        check(f"a load of one tensor still verifies the whole file ({sig})",
              one_line_naming(out, "hash mismatch", "model-00001-of-00002.safetensors"), out.stderr)
    shard_copy = flipped_copy(tmp, model, "model-00002-of-00002.safetensors", 100)
    out = signed_load(shard_copy, os.path.join(sigs, "theirs-shards.sig"), "--public-key", pub)
    check("a shard-mode signed load names the shard", one_line_naming(out, "hash mismatch", "shard "), out.stderr)
    out = ringload("load", model, "--public-key", pub)
    check("--public-key without --signature is refused", out.returncode != 0, out.stderr)


def python_loads(tmp, model, sigs, keys):
    """load_file, safe_open, stream_tensors and TensorDeserializer with signature=: equal to an
    unsigned load when the file is intact; HashMismatchError naming it, and no tensor handed out,
    when it is not."""
    try:
        import ringload
        import torch
    except ImportError as error:
        print(f"python loads not checked: the package or torch is not in this preset ({error})")
        return
    sig, pub = os.path.join(sigs, "theirs-p256.sig"), os.path.join(keys, "p256.pub")
    trust = {"signature": sig, "public_key": pub}
    name = "model-00001-of-00002.safetensors"
    path = os.path.join(model, name)
    plain = ringload.load_file(path)
    same = lambda got: set(got) == set(plain) and all(torch.equal(got[k], plain[k]) for k in plain)  # noqa: E731
    check("load_file(signature=) equals an unsigned load", same(ringload.load_file(path, **trust)))
    with ringload.safe_open(path, "pt", **trust) as opened:
        got = {key: opened.get_tensor(key) for key in opened.keys()}
        key = next(k for k in plain if plain[k].dim() >= 1 and plain[k].shape[0] > 1)
        part = opened.get_slice(key)[1:]
    check("safe_open(signature=) equals an unsigned load, slices too",
          same(got) and torch.equal(part, plain[key][1:]))
    check("stream_tensors(signature=) equals an unsigned load",
          same(dict(ringload.stream_tensors(path, **trust))))
    with ringload.TensorDeserializer(os.path.join(model, "model.tensors"), device="cpu", lazy_load=True,
                                     **trust) as lazy:
        check("TensorDeserializer(signature=, lazy_load=True) loads", len(list(lazy.keys())) > 0)
    copy = flipped_copy(tmp, model, name, 2)
    changed = os.path.join(copy, name)
    calls = {"load_file": lambda: ringload.load_file(changed, **trust),
             "safe_open": lambda: ringload.safe_open(changed, "pt", **trust),
             "TensorDeserializer": lambda: ringload.TensorDeserializer(changed, device="cpu", **trust)}
    for what, call in calls.items():
        try:
            call()
            check(f"{what}(signature=) of a changed file raises", False, "no error")
        except ringload.errors.HashMismatchError as error:
            check(f"{what}(signature=) of a changed file raises HashMismatchError naming it", name in str(error),
                  error)
    handed = []
    try:
        for item in ringload.stream_tensors(changed, **trust):
            handed.append(item)
        check("stream_tensors(signature=) of a changed file raises", False, "no error")
    except ringload.errors.HashMismatchError as error:
        check("stream_tensors(signature=) of a changed file raises before handing out any tensor",
              handed == [] and name in str(error), (len(handed), error))
    try:
        ringload.load_file(path, public_key=pub)
        check("public_key= without signature= is refused", False, "no error")
    except ValueError as error:
        check("public_key= without signature= is refused", "signature" in str(error), error)
    saved = os.path.join(tmp, "saved.safetensors")
    ringload.save_file(plain, saved, sign_key=os.path.join(keys, "p256.key"))
    out = run(MODEL_SIGNING, "verify", "key", saved, "--signature", saved + ".sig", "--public_key", pub)
    check("save_file(sign_key=): model_signing verifies it", out.returncode == 0, out.stderr[-2000:])
    check("load_file(signature=) of what save_file signed", same(ringload.load_file(saved, signature=saved + ".sig",
                                                                                     public_key=pub)))
    # A one-file signature given with the file as a list (a server's `uri`): that file's load.
    check("stream_folder([file], signature=) of what save_file signed",
          same(dict(ringload.stream_folder([saved], signature=saved + ".sig", public_key=pub))))
    tensorizer_out = os.path.join(tmp, "serialized.tensors")
    with ringload.TensorSerializer(tensorizer_out, sign_key=os.path.join(keys, "p256.key"),
                                   signature=os.path.join(tmp, "serialized.sig")) as serializer:
        serializer.write_state_dict(plain)
    out = run(MODEL_SIGNING, "verify", "key", tensorizer_out, "--signature", os.path.join(tmp, "serialized.sig"),
              "--public_key", pub)
    check("TensorSerializer(sign_key=, signature=): model_signing verifies it", out.returncode == 0,
          out.stderr[-2000:])
    try:
        import io
        ringload.TensorSerializer(io.BytesIO(), sign_key=os.path.join(keys, "p256.key"))
        check("TensorSerializer(file object, sign_key=) is refused", False, "no error")
    except ValueError as error:
        check("TensorSerializer(file object, sign_key=) is refused (the signature needs a path)",
              "path" in str(error), error)
    summary = ringload.convert(path, os.path.join(tmp, "converted-py.pt"), sign_key=os.path.join(keys, "p256.key"))
    out = run(MODEL_SIGNING, "verify", "key", os.path.join(tmp, "converted-py.pt"), "--signature",
              summary["signature"], "--public_key", pub)
    check("ringload.convert(sign_key=): model_signing verifies it", out.returncode == 0, out.stderr[-2000:])
    from ringload.ground import signing
    from ringload.servers import weights
    options = weights.parse_options({"signature": sig, "public_key": pub})
    signed = signing.open_model([path], options.stream_kwargs)
    checked = signed.verify_files([os.path.join(model, f) for f in os.listdir(model) if f.endswith(
        (".safetensors", ".tensors", ".pt"))])
    check("the vLLM loader's options open the signed model and hash the other files", checked["files"] == 2, checked)


KEYLESS = os.path.join(DATA, "model_signing", "keyless")
KEYLESS_SIGNER = ["--identity", "stefanb@us.ibm.com", "--identity-issuer", "https://sigstore.verify.ibm.com/oauth2"]
CONFORMANCE_SIGNER = ["--identity", "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/"
                      ".github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main",
                      "--identity-issuer", "https://token.actions.githubusercontent.com"]


def keyless_verify(model, signature, *extra, root=None):
    ignore = ["--ignore-paths", "ignore-me"] if os.path.exists(os.path.join(model, "ignore-me")) else []
    return ringload("verify", model, "--signature", signature, "--trust-root",
                    root or os.path.join(KEYLESS, "trusted_root.json"), *extra, *ignore)


def keyless(tmp):
    """Real keyless signatures (model_signing sign sigstore), verified offline against the
    trusted root, and model_signing's own offline verification of the same as the reference;
    then every part of the proof changed, one at a time."""
    for version in ("v0.3.1", "v1.0.0", "v1.0.1", "v1.1.0"):
        model = os.path.join(KEYLESS, f"mt-{version}-sigstore")
        out = keyless_verify(model, os.path.join(model, "model.sig"), *KEYLESS_SIGNER)
        # model_signing takes ignored paths relative to the working directory, ringload to the model.
        ignore = (["--ignore-paths", os.path.join(model, "ignore-me")] if os.path.exists(os.path.join(model, "ignore-me"))
                  else [])
        theirs = run(MODEL_SIGNING, "verify", "sigstore", "--trust_config", os.path.join(KEYLESS, "client_trust_config.json"),
                     "--identity", KEYLESS_SIGNER[1], "--identity_provider", KEYLESS_SIGNER[3], "--signature",
                     os.path.join(model, "model.sig"), *ignore,
                     model)
        check(f"a keyless signature ({version}) verifies offline, as model_signing verifies it",
              out.returncode == 0 and "keyless: stefanb@us.ibm.com" in out.stdout and theirs.returncode == 0,
              out.stderr + out.stdout + theirs.stderr[-1500:])
    model = os.path.join(KEYLESS, "mt-v1.0.0-sigstore")
    sig = os.path.join(model, "model.sig")
    out = keyless_verify(model, sig, *KEYLESS_SIGNER, root=os.path.join(KEYLESS, "client_trust_config.json"))
    check("a ClientTrustConfig is taken as the trusted root", out.returncode == 0, out.stderr)
    out = ringload("verify", model, "--signature", sig)
    check("a keyless signature without a trusted root says what to give", one_line_naming(out, "--trust-root"),
          out.stderr)
    out = keyless_verify(model, sig, "--identity", "someone@example.com", "--identity-issuer", KEYLESS_SIGNER[3])
    check("another signer is refused, naming who signed", one_line_naming(out, "stefanb@us.ibm.com", "not someone"),
          out.stderr)
    out = keyless_verify(model, sig, "--identity", KEYLESS_SIGNER[1], "--identity-issuer", "https://accounts.google.com")
    check("another OIDC issuer is refused", one_line_naming(out, "vouched for by", "accounts.google.com"), out.stderr)
    out = keyless_verify(model, sig)
    check("a keyless signature without --identity says what to give", one_line_naming(out, "--identity"), out.stderr)
    keyless_tampers(tmp, model, sig)


def keyless_tampers(tmp, model, sig):
    with open(os.path.join(KEYLESS, "trusted_root.json")) as file:
        root = json.load(file)

    def entry(bundle):
        return bundle["verificationMaterial"]["tlogEntries"][0]

    def flip_base64(text):
        raw = bytearray(base64.b64decode(text))
        raw[len(raw) // 2] ^= 1
        return base64.b64encode(bytes(raw)).decode()

    def flip_set(bundle):
        entry(bundle)["inclusionPromise"]["signedEntryTimestamp"] = flip_base64(
            entry(bundle)["inclusionPromise"]["signedEntryTimestamp"])

    def later(bundle):
        entry(bundle)["integratedTime"] = str(int(entry(bundle)["integratedTime"]) + 1)

    def flip_proof(bundle):
        entry(bundle)["inclusionProof"]["hashes"][0] = flip_base64(entry(bundle)["inclusionProof"]["hashes"][0])

    def flip_checkpoint(bundle):
        note = entry(bundle)["inclusionProof"]["checkpoint"]["envelope"]
        head, signature = note.rsplit(" ", 1)
        entry(bundle)["inclusionProof"]["checkpoint"]["envelope"] = head + " " + flip_base64(signature.strip()) + "\n"

    def other_certificate(bundle):
        with open(os.path.join(KEYLESS, "mt-v1.0.1-sigstore", "model.sig")) as file:
            other = json.load(file)
        bundle["verificationMaterial"]["certificate"] = other["verificationMaterial"]["certificate"]

    for what, change, words in (("its log's inclusion promise changed", flip_set, ["inclusion promise"]),
                                ("its log time changed", later, ["inclusion promise"]),
                                ("its inclusion proof changed", flip_proof, ["inclusion proof"]),
                                ("its checkpoint's signature changed", flip_checkpoint, ["checkpoint"]),
                                ("another signer's certificate", other_certificate, ["keyless signature"])):
        changed = rewritten(sig, os.path.join(tmp, "keyless-changed.sig"), change)
        out = keyless_verify(model, changed, *KEYLESS_SIGNER)
        check(f"a keyless signature with {what} is refused", one_line_naming(out, "keyless-changed.sig", *words),
              out.stderr)
    for what, change, words in (("no certificate authority", lambda r: r.update(certificateAuthorities=[
                                    {"certChain": {"certificates": [root["certificateAuthorities"][0]["certChain"]
                                                                    ["certificates"][-1]]}}]), ["chain"]),
                                ("no CT log", lambda r: r.update(ctlogs=[]), ["SCT"]),
                                ("other transparency logs", lambda r: r.update(tlogs=r["ctlogs"]),
                                 ["not in the trusted root"])):
        other_root = json.loads(json.dumps(root))
        change(other_root)
        path = os.path.join(tmp, "other-root.json")
        with open(path, "w") as file:
            json.dump(other_root, file)
        out = keyless_verify(model, sig, *KEYLESS_SIGNER, root=path)
        check(f"a trusted root with {what} refuses the signature", one_line_naming(out, *words), out.stderr)
    folder = os.path.join(tmp, "conformance")
    os.makedirs(folder)
    shutil.copy(os.path.join(KEYLESS, "conformance", "a.txt"), folder)
    for case, words in (("dsse-invalid-sig_fail", ["signature"]), ("dsse-mismatch-envelope_fail", ["another payload"]),
                        ("dsse-mismatch-sig_fail", ["another signature"])):
        out = ringload("verify", folder, "--signature", os.path.join(KEYLESS, "conformance", case, "bundle.sigstore.json"),
                       "--trust-root", os.path.join(KEYLESS, "trusted_root.json"), *CONFORMANCE_SIGNER)
        check(f"sigstore's conformance case {case} is refused", one_line_naming(out, *words), out.stderr)
    out = ringload("verify", folder, "--signature",
                   os.path.join(KEYLESS, "conformance", "happy-path-intoto-in-dsse-v3", "bundle.sigstore.json"),
                   "--trust-root", os.path.join(KEYLESS, "trusted_root.json"), *CONFORMANCE_SIGNER)
    check("sigstore's conformance happy path passes the keyless checks (then is no model_signing statement)",
          one_line_naming(out, "predicate") or one_line_naming(out, "statement"), out.stderr)
    copy = os.path.join(tmp, "keyless-model")
    shutil.copytree(model, copy)
    with open(os.path.join(copy, "signme-1"), "r+b") as file:
        byte = file.read(1)
        file.seek(0)
        file.write(bytes([byte[0] ^ 1]))
    out = keyless_verify(copy, os.path.join(copy, "model.sig"), *KEYLESS_SIGNER)
    check("a keyless-signed model with a changed file fails naming it", one_line_naming(out, "hash mismatch", "signme-1"),
          out.stderr)


def python_api(model, sigs, keys):
    """ringload.verify_model / sign_model: the same checks through the package, where this build
    has it (not in the sanitizer presets: said, not counted)."""
    try:
        import ringload
    except ImportError as error:
        print(f"python API not checked: the package is not built in this preset ({error})")
        return
    keyless_model = os.path.join(KEYLESS, "mt-v1.0.0-sigstore")
    done = ringload.verify_model(keyless_model, os.path.join(keyless_model, "model.sig"),
                                 trust_root=os.path.join(KEYLESS, "trusted_root.json"), identity=KEYLESS_SIGNER[1],
                                 identity_issuer=KEYLESS_SIGNER[3])
    check("ringload.verify_model with a keyless signature", done["signer"].startswith("keyless: stefanb"), done)
    done = ringload.verify_model(model, os.path.join(sigs, "theirs-p256.sig"), public_key=os.path.join(keys, "p256.pub"))
    check("ringload.verify_model", done["files"] == 6 and done["bytes"] > 0, done)
    try:
        ringload.verify_model(model, os.path.join(sigs, "theirs-p256.sig"), public_key=os.path.join(keys, "p384.pub"))
        check("ringload.verify_model with a wrong key raises", False, "no error")
    except ringload.SignatureError as error:
        check("ringload.verify_model with a wrong key raises SignatureError", "another key" in str(error), error)
    sig = os.path.join(sigs, "python.sig")
    ringload.sign_model(model, sig, private_key=os.path.join(keys, "p256.key"))
    out = run(MODEL_SIGNING, "verify", "key", model, "--signature", sig, "--public_key", os.path.join(keys, "p256.pub"))
    check("model_signing verifies ringload.sign_model's signature", out.returncode == 0, out.stderr[-2000:])
    # The model-level call streamed: a signed folder's tensors, each file verified in its read.
    # (Its two shards are one file's copies: each name comes twice.)
    trust = {"signature": sig, "public_key": os.path.join(keys, "p256.pub")}
    files = ringload._ringload.find_weight_files(model)
    alone = {name: tensor for path in files for name, tensor in ringload.load_file(path).items()}
    streamed = list(ringload.stream_folder(model, **trust))
    expected_names = sorted(name for path in files for name in ringload.load_file(path))
    check("ringload.stream_folder of a signed model hands over each file's tensors",
          sorted(name for name, _ in streamed) == expected_names and
          all(tensor.equal(alone[name]) for name, tensor in streamed), len(streamed))
    try:
        dict(ringload.stream_folder(model, signature=sig, public_key=os.path.join(keys, "p384.pub")))
        check("ringload.stream_folder with a wrong key raises", False, "no error")
    except ringload.SignatureError as error:
        check("ringload.stream_folder with a wrong key raises SignatureError", "another key" in str(error), error)
    # The same files given as a list (the server loaders' `uri`): their folder is the signed
    # model, checked whole; a changed one is named; a config the load does not read is hashed too.
    listed = list(ringload.stream_folder(files, **trust))
    check("ringload.stream_folder of a signed model's files as a list verifies them",
          sorted(name for name, _ in listed) == expected_names and
          all(tensor.equal(alone[name]) for name, tensor in listed), len(listed))
    loaded = ringload.load_folder(files[:1], **trust)  # (one shard: the other holds the same names)
    check("ringload.load_folder of some of a signed model's files as a list, the rest hashed",
          set(loaded) == set(ringload.load_file(files[0])), len(loaded))
    for changed in (files[-1], os.path.join(model, "config.json")):
        original = open(changed, "rb").read()
        try:
            with open(changed, "r+b") as file:
                file.seek(len(original) // 2)
                file.write(bytes([original[len(original) // 2] ^ 1]))
            dict(ringload.stream_folder(files, **trust))
            check(f"a signed list with {os.path.basename(changed)} changed raises", False, "no error")
        except ringload.HashMismatchError as error:
            check(f"a signed list with {os.path.basename(changed)} changed is named",
                  os.path.basename(changed) in str(error), error)
        finally:
            with open(changed, "wb") as file:
                file.write(original)


def main():
    for tool in (RINGLOAD, MODEL_SIGNING):
        if not os.access(tool, os.X_OK):
            print(f"FAILED: {tool} is not there (scripts/setup.sh makes .venv-signing)")
            return 1
    with tempfile.TemporaryDirectory(prefix="ringload-signing-") as tmp:
        model, keys = os.path.join(tmp, "model"), os.path.join(tmp, "keys")
        os.makedirs(model)
        os.makedirs(keys)
        make_model(model)
        key_pair(keys, "p256", ec.SECP256R1())
        key_pair(keys, "p384", ec.SECP384R1())
        make_pki(keys)
        sigs = interop(tmp, model, keys)
        file_tampers(tmp, model, os.path.join(sigs, "theirs-p256.sig"), os.path.join(keys, "p256.pub"))
        file_tampers(tmp, model, os.path.join(sigs, "theirs-shards.sig"), os.path.join(keys, "p256.pub"))
        trust_tampers(tmp, model, sigs, keys)
        hostile_bundles(tmp, model, sigs, keys)
        loads_verify(tmp, model, sigs, keys)
        keyless(tmp)
        python_api(model, sigs, keys)
        python_loads(tmp, model, sigs, keys)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
