"""tests/gpu/torch_step.py: a small PyTorch model's training steps on the GPU, for
scripts/gpu-check.sh: a convolution, layer norm, matrix products through cuBLAS, softmax and
cross-entropy, backward, and an Adam step. Deterministic algorithms only (cuDNN benchmarking
off, cuBLAS's fixed workspace), so two runs print the same bytes; what it prints (the losses
and a hash of the final parameters) is compared between a plain run and one under
`reprise capture --api cuda`. Exit 2 when there is no CUDA device."""
import hashlib
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

if not torch.cuda.is_available():
    print("torch_step: torch sees no CUDA device", file=sys.stderr)
    sys.exit(2)
torch.manual_seed(0)
torch.backends.cudnn.benchmark = False
torch.backends.cudnn.deterministic = True
torch.use_deterministic_algorithms(True)
dev = torch.device("cuda")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm = torch.nn.LayerNorm(8 * 16 * 16)
        self.fc1 = torch.nn.Linear(8 * 16 * 16, 256)
        self.fc2 = torch.nn.Linear(256, 10)

    def forward(self, x):
        x = torch.relu(self.conv(x)).flatten(1)
        x = self.norm(x)
        x = torch.relu(self.fc1(x))
        return torch.log_softmax(self.fc2(x), dim=1)


net = Net().to(dev)
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
x = torch.randn(64, 3, 16, 16, generator=torch.Generator().manual_seed(1)).to(dev)
y = torch.randint(0, 10, (64,), generator=torch.Generator().manual_seed(2)).to(dev)
for step in range(3):
    opt.zero_grad()
    loss = torch.nn.functional.nll_loss(net(x), y)
    loss.backward()
    opt.step()
    print(f"step {step}: loss {loss.item():.9e}")
torch.cuda.synchronize()
h = hashlib.sha256()
for name, p in sorted(net.state_dict().items()):
    h.update(name.encode())
    h.update(p.detach().cpu().numpy().tobytes())
print("parameters sha256", h.hexdigest())
