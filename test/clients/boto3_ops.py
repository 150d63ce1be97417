#!/usr/bin/python3
"""Runs boto3 operations against an S3 endpoint for the client tests.

Reads one JSON document on stdin:
  {"endpoint": "http://127.0.0.1:PORT", "ops": [OP, ...], "unsigned": false}
and prints a JSON list with one result per OP, in order. Credentials and
region come from the environment (AWS_ACCESS_KEY_ID, ...); with "unsigned"
true the requests are anonymous (botocore's UNSIGNED).

An OP is {"call": NAME, "args": {...}} plus, by call:
  any client method    "body_file": path sent as Body; "save_to": path the
                       response Body is written to (otherwise the result has
                       body_md5, body_size and, when small, body_text)
  "upload_file"        args: Filename, Bucket, Key, ExtraArgs (managed,
                       multipart from "threshold" bytes, default 8 MiB)
  "download_file"      args: Bucket, Key, Filename (managed, ranged GETs)
  "paginate"           "operation": client method, args: its parameters and
                       PaginationConfig; the result is the list of pages
  "presign"            "method": client method, args: Params, ExpiresIn
  "presign_post"       args: generate_presigned_post's (Bucket, Key, Fields,
                       Conditions, ExpiresIn); the result is its url and fields

A client error becomes {"error": {"code", "status", "message"}} for that OP
and the next OPs still run. Every response keeps its raw HTTP headers under
"headers" (boto3 shows them, so the CID headers can be checked).
"""
import base64
import datetime
import hashlib
import json
import sys

import boto3
from botocore import UNSIGNED
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError


def plain(value):
    """The response as JSON: dates as ISO strings, streams read."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


def shaped(response, save_to=None):
    out = dict(response)
    meta = out.pop("ResponseMetadata", {})
    out["status"] = meta.get("HTTPStatusCode")
    out["headers"] = meta.get("HTTPHeaders", {})
    body = out.pop("Body", None)
    if body is not None:
        digest = hashlib.md5()
        size = 0
        sink = open(save_to, "wb") if save_to else None
        small = bytearray()
        try:
            for chunk in body.iter_chunks(1 << 20):
                digest.update(chunk)
                size += len(chunk)
                if sink:
                    sink.write(chunk)
                elif len(small) < 65536:
                    small.extend(chunk[: 65536 - len(small)])
        finally:
            if sink:
                sink.close()
        out["body_md5"] = digest.hexdigest()
        out["body_size"] = size
        if not sink and size <= 65536:
            out["body_text"] = small.decode("utf-8", errors="replace")
    return plain(out)


def run(client, op):
    call = op["call"]
    args = dict(op.get("args", {}))
    if call == "upload_file":
        threshold = op.get("threshold", 8 * 1024 * 1024)
        client.upload_file(
            Config=TransferConfig(multipart_threshold=threshold, multipart_chunksize=threshold), **args
        )
        return {"done": True}
    if call == "download_file":
        client.download_file(Config=TransferConfig(max_concurrency=4), **args)
        return {"done": True}
    if call == "paginate":
        pages = client.get_paginator(op["operation"]).paginate(**args)
        return [shaped(page) for page in pages]
    if call == "presign":
        return {"url": client.generate_presigned_url(op["method"], **args)}
    if call == "presign_post":
        return client.generate_presigned_post(**args)
    body_file = op.get("body_file")
    if body_file:
        with open(body_file, "rb") as body:
            return shaped(getattr(client, call)(Body=body, **args))
    return shaped(getattr(client, call)(**args), op.get("save_to"))


def main():
    request = json.load(sys.stdin)
    client = boto3.client(
        "s3",
        endpoint_url=request["endpoint"],
        config=Config(
            signature_version=UNSIGNED if request.get("unsigned") else "s3v4",
            s3={"addressing_style": "path"},
            retries={"max_attempts": 1, "mode": "standard"},
        ),
    )
    results = []
    for op in request["ops"]:
        try:
            results.append(run(client, op))
        except ClientError as err:
            results.append(
                {
                    "error": {
                        "code": err.response.get("Error", {}).get("Code"),
                        "status": err.response.get("ResponseMetadata", {}).get("HTTPStatusCode"),
                        "message": str(err),
                    }
                }
            )
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
