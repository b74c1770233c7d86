"""tests/gpu/torch_graph.py: a PyTorch CUDA graph (torch.cuda.CUDAGraph, made by stream
capture), for scripts/gpu-check.sh: a small MLP's forward pass captured once and replayed on
three different inputs copied into its static input; each result is printed (losses to nine
digits and a hash), so that a run under `reprise capture --api cuda` can be compared with a
plain run byte for byte. Exit 2 when there is no CUDA device."""
import hashlib
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

if not torch.cuda.is_available():
    print("torch_graph: torch sees no CUDA device", file=sys.stderr)
    sys.exit(2)
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
dev = torch.device("cuda")
net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 10)).to(dev)
static_in = torch.zeros(32, 64, device=dev)
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side), torch.no_grad():  # warm-up outside the graph, as PyTorch asks
    for _ in range(2):
        net(static_in)
torch.cuda.current_stream().wait_stream(side)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g), torch.no_grad():
    static_out = torch.softmax(net(static_in), dim=1)
for i in range(3):
    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(10 + i))
    static_in.copy_(x.to(dev))
    g.replay()
    out = static_out.cpu()
    h = hashlib.sha256(out.numpy().tobytes()).hexdigest()[:16]
    print(f"replay {i}: max {out.max().item():.9e} hash {h}")
