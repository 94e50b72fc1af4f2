#!/usr/bin/env python3
"""Streams one completion from a headroom router (headroom.v1.Inference/Generate).

The Python stubs are generated at run time from protos/headroom/v1/*.proto with grpcio-tools into
a temporary directory; nothing generated is committed.

    build/venv/bin/python examples/generate.py --target 127.0.0.1:50051 --max-tokens 32 "Hello"

Prints the text as it streams, then a line "[finish_reason=LENGTH prompt_tokens=N
completion_tokens=M]". Exit status 0 on success, 1 on an RPC error (the gRPC status is printed).
"""
import argparse
import importlib
import pathlib
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
PROTO_ROOT = REPO / "protos"


def load_stubs(out_dir):
    """Compiles the headroom.v1 protos into out_dir and imports the Inference stubs."""
    from grpc_tools import protoc
    import grpc_tools

    well_known = pathlib.Path(grpc_tools.__file__).parent / "_proto"
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / "headroom" / "v1").glob("*.proto"))
    rc = protoc.main(["grpc_tools.protoc", f"-I{PROTO_ROOT}", f"-I{well_known}",
                      f"--python_out={out_dir}", f"--grpc_python_out={out_dir}", *protos])
    if rc != 0:
        sys.exit(f"error: protoc failed ({rc}) on {', '.join(protos)}")
    sys.path.insert(0, out_dir)
    pb2 = importlib.import_module("headroom.v1.inference_pb2")
    pb2_grpc = importlib.import_module("headroom.v1.inference_pb2_grpc")
    worker_pb2 = importlib.import_module("headroom.v1.worker_pb2")  # FinishReason lives there
    return pb2, pb2_grpc, worker_pb2


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("prompt", nargs="?", default="Once upon a time", help="text prompt")
    parser.add_argument("--target", default="127.0.0.1:50051", help="router host:port")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    parser.add_argument("--model", default="", help="served model id (empty = the only one)")
    parser.add_argument("--timeout", type=float, default=120.0, help="deadline in seconds")
    args = parser.parse_args()

    import grpc

    with tempfile.TemporaryDirectory(prefix="headroom-stubs-") as out_dir:
        pb2, pb2_grpc, worker_pb2 = load_stubs(out_dir)
        request = pb2.GenerateRequest(model=args.model, text=args.prompt)
        request.sampling.temperature = args.temperature
        request.sampling.max_tokens = args.max_tokens
        finish = worker_pb2.FinishReason.Name(0)
        usage = None
        with grpc.insecure_channel(args.target) as channel:
            stub = pb2_grpc.InferenceStub(channel)
            try:
                for response in stub.Generate(request, timeout=args.timeout):
                    sys.stdout.write(response.text)
                    sys.stdout.flush()
                    if response.finish_reason:
                        finish = worker_pb2.FinishReason.Name(response.finish_reason)
                        usage = response.usage
            except grpc.RpcError as e:
                print(f"\nerror: {e.code().name}: {e.details()}", file=sys.stderr)
                return 1
        print()
        reason = finish.removeprefix("FINISH_REASON_")
        if usage is not None:
            print(f"[finish_reason={reason} prompt_tokens={usage.prompt_tokens} "
                  f"completion_tokens={usage.completion_tokens}]")
        else:
            print(f"[finish_reason={reason}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
