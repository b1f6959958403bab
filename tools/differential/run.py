#!/usr/bin/env python3
"""Runs Starlark scripts on two function binaries side by side and prints
what each answered (desired resources' count, dxr status, results).

    python3 run.py BINARY_A BINARY_B script.star [more.star ...]
    echo 'print(1)' | python3 run.py A B -

Needs `pip install grpcio protobuf`. A development aid for comparing this
function with another implementation; no test depends on it.
"""
import json
import socket
import subprocess
import sys
import time

import grpc
from google.protobuf import json_format, struct_pb2

METHOD = "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction"


def field(number, payload):
    """A length-delimited protobuf field."""
    key = bytes([number << 3 | 2])
    return key + varint(len(payload)) + payload


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def struct(value):
    s = struct_pb2.Struct()
    json_format.ParseDict(value, s)
    return s.SerializeToString()


def request(source, oxr=None, spec=None):
    spec = {"apiVersion": "starlark.fn.crossplane.io/v1alpha1", "kind": "StarlarkInput",
            "spec": spec or {"source": source}}
    oxr = oxr or {"apiVersion": "example.org/v1", "kind": "X", "metadata": {"name": "x"}, "spec": {}}
    observed = field(1, field(1, struct(oxr)))  # State.composite.resource
    return field(2, observed) + field(4, struct(spec))


def fields(data):
    """(number, wire type, value) of each field of a message."""
    i = 0
    while i < len(data):
        key, i = read_varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(data, i)
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 2:
            n, i = read_varint(data, i)
            value, i = data[i:i + n], i + n
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wire)
        yield number, wire, value


def read_varint(data, i):
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, i


def summary(answer):
    """The severity and message of each result, and dxr's status."""
    out = {"results": [], "resources": 0, "status": None}
    for number, _, value in fields(answer):
        if number == 3:  # results
            r = {n: v for n, _, v in fields(value)}
            out["results"].append([r.get(1, 0), r.get(2, b"").decode("utf-8", "replace")])
        if number == 2:  # desired
            for n, _, v in fields(value):
                if n == 2:
                    out["resources"] += 1
                if n == 1:
                    for rn, _, rv in fields(v):
                        if rn == 1:
                            s = struct_pb2.Struct()
                            s.ParseFromString(rv)
                            out["status"] = json_format.MessageToDict(s).get("status")
    return out


def start(binary):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    metrics = socket.socket()
    metrics.bind(("127.0.0.1", 0))
    metrics_port = metrics.getsockname()[1]
    metrics.close()
    args = [binary, "--insecure", "--address", "127.0.0.1:%d" % port]
    env = {"METRICS_ADDRESS": "127.0.0.1:%d" % metrics_port, "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    channel = grpc.insecure_channel("127.0.0.1:%d" % port)
    grpc.channel_ready_future(channel).result(timeout=30)
    call = channel.unary_unary(METHOD, request_serializer=None, response_deserializer=None)
    return proc, call


def run(call, source):
    try:
        return summary(call(request(source), timeout=60))
    except grpc.RpcError as e:
        return {"error": "%s: %s" % (e.code().name, e.details())}


def run_spec(call, spec):
    """Like `run`, with a whole input spec (inline modules, ...)."""
    try:
        return summary(call(request(None, spec=spec), timeout=60))
    except grpc.RpcError as e:
        return {"error": "%s: %s" % (e.code().name, e.details())}


def main():
    a, b, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    sources = [sys.stdin.read()] if paths == ["-"] else [open(p).read() for p in paths]
    procs = [start(a), start(b)]
    try:
        for source in sources:
            print(json.dumps({"a": run(procs[0][1], source), "b": run(procs[1][1], source)}, ensure_ascii=False))
    finally:
        for proc, _ in procs:
            proc.kill()


if __name__ == "__main__":
    main()
