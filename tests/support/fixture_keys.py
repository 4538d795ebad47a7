"""tests/support/fixture_keys.py: the CLI arguments that give a fixture's secret.

    args = key_args(manifest, secrets_dir)   # [] | ["--key-file", F] | ["--passphrase-file", F]

The manifest's encryption entry (raw key in hex, or a passphrase) is written to a file under
`secrets_dir`, as users give secrets to `ringload` (never on the command line).
"""
import os


def key_args(manifest, secrets):
    encryption = manifest.get("encryption")
    if not encryption:
        return []
    path = os.path.join(secrets, manifest["file"] + ".secret")
    if encryption["kind"] == "raw_key":
        with open(path, "wb") as f:
            f.write(bytes.fromhex(encryption["key_hex"]))
        return ["--key-file", path]
    with open(path, "w", encoding="utf-8") as f:
        f.write(encryption["passphrase"])
    return ["--passphrase-file", path]
