"""tests/support/azure_shared_key.py: Azure Storage's request authorisation rules, computed by
azure-storage-blob's own code (the .venv's), for tests/io/azure_sign_test.py and
tests/support/azure_server.py.

    policy = ServiceSharedKeyPolicy(account, key)
    authorization, string_to_sign = sdk_authorization(policy, "GET", url, headers)
    why = sas_refusal(params, account, key, container, blob, "https")   # None: the SAS allows the read

Raises ImportError where azure-storage-blob is not installed.
"""
import datetime
from unittest import mock

from azure.core.pipeline import PipelineContext, PipelineRequest
from azure.core.pipeline.transport import HttpRequest
from azure.storage.blob._shared import authentication
from azure.storage.blob._shared.authentication import SharedKeyCredentialPolicy
from azure.storage.blob._shared.shared_access_signature import _SharedAccessHelper
from azure.storage.blob._shared_access_signature import _BlobSharedAccessHelper


class ServiceSharedKeyPolicy(SharedKeyCredentialPolicy):
    """The SDK's Shared Key policy with the string-to-sign's Range line read from the Range header,
    as the service does. The SDK keys that line 'byte_range', a header no request has (the SDK
    sends x-ms-range, an x-ms-* header it signs as such), so for its own requests the line is
    always empty; every other line, the canonicalized resource and the HMAC stay the SDK's."""

    @staticmethod
    def _get_headers(request, headers_to_sign):
        names = ["range" if name == "byte_range" else name for name in headers_to_sign]
        return SharedKeyCredentialPolicy._get_headers(request, names)


def sdk_authorization(policy, method, url, headers):
    """(Authorization, string-to-sign) of `policy` for a request to `url` with `headers`, which
    should have lowercase names: the SDK signs only x-ms-* headers spelt in lowercase."""
    request = PipelineRequest(HttpRequest(method, url, headers=dict(headers)), PipelineContext(None))
    strings = []
    sign_string = authentication.sign_string

    def capture(key, string_to_sign, *args, **kwargs):
        strings.append(string_to_sign)
        return sign_string(key, string_to_sign, *args, **kwargs)

    with mock.patch.object(authentication, "sign_string", capture):
        policy.on_request(request)
    return request.http_request.headers.get("Authorization"), (strings[0] if strings else None)


def _utc(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)


def _signature_of(fields, account, key, container, blob):
    """The sig= the service expects for a SAS with `fields` (its query without sig), or None for a
    kind of SAS this does not check."""
    if "ss" in fields or "srt" in fields:  # an account SAS
        helper = _SharedAccessHelper()
        helper.query_dict = dict(fields)
        helper.add_account_signature(account, key)
    else:
        paths = {"b": f"{container}/{blob}", "c": container}
        if fields.get("sr") not in paths:
            return None
        helper = _BlobSharedAccessHelper()
        helper.query_dict = dict(fields)
        helper.add_resource_signature(account, key, paths[fields["sr"]])
    return helper.query_dict["sig"]


def sas_refusal(params, account, key, container, blob, scheme, now=None):
    """Why the service would refuse a read of container/blob with the SAS in `params` (the
    request's query, decoded), or None. The signature is recomputed with the SDK's helpers over
    the token's own fields, so any field changed or any other blob or container fails it."""
    fields = {name: value for name, value in params.items() if name != "sig" and name != "snapshot"}
    expected = _signature_of(fields, account, key, container, blob)
    if expected is None:
        return "this kind of SAS (sr=%s) is not served here" % fields.get("sr")
    if expected != params.get("sig"):
        return "Signature did not match"
    now = now or datetime.datetime.now(datetime.timezone.utc)
    if "se" not in fields or _utc(fields["se"]) < now:
        return "Signed expiry time [%s] must be after current time" % fields.get("se")
    if "st" in fields and _utc(fields["st"]) > now:
        return "Signed start time [%s] is after the current time" % fields["st"]
    if "r" not in fields.get("sp", ""):
        return "This request is not authorized to perform this operation using this permission."
    if scheme not in fields.get("spr", "https,http").split(","):
        return "This request is not authorized to perform this operation using this protocol."
    if ("ss" in fields and "b" not in fields["ss"]) or ("srt" in fields and "o" not in fields["srt"]):
        return "This request is not authorized to perform this operation using this resource type."
    return None
