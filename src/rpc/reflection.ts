/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha;
 * https://github.com/grpc/grpc/blob/master/doc/server-reflection.md), so that `buf curl`,
 * grpcurl and similar tools can call cubby without the proto file. Both versions carry the
 * same messages under different packages; one handler answers both.
 */
import { createRegistry, toBinary, type DescFile, type Registry } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { ServerReflection as ReflectionV1 } from "../gen/grpc/reflection/v1/reflection_pb.ts";
import { ServerReflection as ReflectionV1alpha } from "../gen/grpc/reflection/v1alpha/reflection_pb.ts";
import { GrpcCode } from "../errors.ts";

/** The request oneof shared by both reflection versions. */
type ReflectionRequest = {
  host: string;
  messageRequest:
    | { case: "fileByFilename"; value: string }
    | { case: "fileContainingSymbol"; value: string }
    | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
    | { case: "allExtensionNumbersOfType"; value: string }
    | { case: "listServices"; value: string }
    | { case: undefined; value?: undefined };
};

type ReflectionResponse =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

/**
 * Registers both reflection services for the given files' services.
 * @param files the generated file descriptors whose services are served (with their imports)
 */
export function registerReflection(router: ConnectRouter, files: DescFile[]): void {
  const all = [...files, ReflectionV1.file, ReflectionV1alpha.file];
  const registry: Lookup = { types: createRegistry(...all), files: new Map() };
  const addFile = (f: DescFile) => {
    if (registry.files.has(f.proto.name)) return;
    registry.files.set(f.proto.name, f);
    f.dependencies.forEach(addFile);
  };
  all.forEach(addFile);
  const services = [...files.flatMap((f) => f.services), ReflectionV1, ReflectionV1alpha].map((s) => ({ name: s.typeName }));
  const answer = (req: ReflectionRequest) => ({
    validHost: req.host,
    originalRequest: req,
    messageResponse: respond(registry, services, req),
  });
  router.service(ReflectionV1, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) yield answer(req as ReflectionRequest) as never;
    },
  });
  router.service(ReflectionV1alpha, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) yield answer(req as ReflectionRequest) as never;
    },
  });
}

/** Types by name, and files (with their imports) by file name. */
interface Lookup {
  types: Registry;
  files: Map<string, DescFile>;
}

function respond(registry: Lookup, services: { name: string }[], req: ReflectionRequest): ReflectionResponse {
  const { messageRequest: m } = req;
  switch (m.case) {
    case "listServices":
      return { case: "listServicesResponse", value: { service: services } };
    case "fileByFilename": {
      const file = registry.files.get(m.value);
      return file ? descriptors(file) : notFound(`file "${m.value}" not found`);
    }
    case "fileContainingSymbol": {
      const file = fileOfSymbol(registry, m.value);
      return file ? descriptors(file) : notFound(`symbol "${m.value}" not found`);
    }
    case "fileContainingExtension":
      return notFound(`extension ${m.value.extensionNumber} of "${m.value.containingType}" not found`);
    case "allExtensionNumbersOfType":
      return notFound(`type "${m.value}" has no extensions here`);
    default:
      return { case: "errorResponse", value: { errorCode: GrpcCode.INVALID_ARGUMENT, errorMessage: "empty reflection request" } };
  }
}

/** The file declaring a fully-qualified symbol: a type, a service, or a service's method. */
function fileOfSymbol(registry: Lookup, symbol: string): DescFile | undefined {
  const desc = registry.types.get(symbol);
  if (desc !== undefined) return desc.file;
  const dot = symbol.lastIndexOf(".");
  if (dot > 0) {
    const service = registry.types.getService(symbol.slice(0, dot));
    if (service?.methods.some((m) => m.name === symbol.slice(dot + 1))) return service.file;
  }
  return undefined;
}

/** The file and, transitively, every file it imports, as serialized FileDescriptorProtos. */
function descriptors(file: DescFile): ReflectionResponse {
  const seen = new Set<string>();
  const out: Uint8Array[] = [];
  const visit = (f: DescFile) => {
    if (seen.has(f.proto.name)) return;
    seen.add(f.proto.name);
    out.push(toBinary(FileDescriptorProtoSchema, f.proto));
    f.dependencies.forEach(visit);
  };
  visit(file);
  return { case: "fileDescriptorResponse", value: { fileDescriptorProto: out } };
}

function notFound(message: string): ReflectionResponse {
  return { case: "errorResponse", value: { errorCode: GrpcCode.NOT_FOUND, errorMessage: message } };
}
