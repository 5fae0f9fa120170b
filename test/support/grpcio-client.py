"""
Unary calls through gRPC's C core (Debian's python3-grpcio, with python3-protobuf): an independent
client for the RPC tests (test/integration/rpc-unary.test.ts).

Usage: /usr/bin/python3 grpcio-client.py TARGET DESCRIPTORS < calls.json > results.json

TARGET is host:port (h2c, no TLS). DESCRIPTORS is a serialized google.protobuf.FileDescriptorSet
holding cubby/v1/files.proto and its imports, so that messages are built from the same schema the
server serves, with the protobuf runtime (no generated code). calls.json is a JSON list of
{"method": "GetFile", "request": {...proto3 JSON...}, "metadata": [[k, v], ...], "timeout": s?};
each result is {"response": {...proto3 JSON, proto field names...}} or {"code": "NOT_FOUND",
"details": "..."}, in order.
"""
import json
import sys

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

SERVICE = "cubby.v1.FileService"


def main() -> None:
    target, descriptors = sys.argv[1], sys.argv[2]
    files = descriptor_pb2.FileDescriptorSet()
    with open(descriptors, "rb") as f:
        files.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for proto in files.file:
        pool.Add(proto)
    factory = message_factory.MessageFactory(pool)
    service = pool.FindServiceByName(SERVICE)
    calls = json.load(sys.stdin)
    results = []
    with grpc.insecure_channel(target) as channel:
        for call in calls:
            method = service.FindMethodByName(call["method"])
            request_class = factory.GetPrototype(method.input_type)
            response_class = factory.GetPrototype(method.output_type)
            stub = channel.unary_unary(
                f"/{SERVICE}/{method.name}",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=response_class.FromString,
            )
            request = json_format.ParseDict(call.get("request", {}), request_class())
            metadata = [tuple(pair) for pair in call.get("metadata", [])]
            try:
                response = stub(request, metadata=metadata, timeout=call.get("timeout"))
                results.append({"response": json_format.MessageToDict(response, preserving_proto_field_name=True, including_default_value_fields=True)})
            except grpc.RpcError as e:
                results.append({"code": e.code().name, "details": e.details()})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
