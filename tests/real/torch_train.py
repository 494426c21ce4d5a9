"""A PyTorch CPU training loop (issue 12): an MLP and a small convolutional
net trained with Adam on fixed data. It prints every loss and a hash of the
weights and of Adam's state, in full precision, so a run under the shim must
print exactly what a run without it prints."""
import hashlib
import sys

import torch

torch.manual_seed(0)
torch.set_num_threads(1)  # one reduction order: results depend on the data only


def digest(tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:32]


def train(model, make_batch, steps, lr):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        x, y = make_batch(step)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
    return losses, digest(model.parameters()), digest(state)


# An MLP whose activations (256 x 2048 floats, 2 MiB) and weights cross every
# threshold the tests use.
g = torch.Generator().manual_seed(1)
X = torch.randn(4096, 512, generator=g)
Y = (X[:, :8].sum(1) > 0).long() + 2 * (X[:, 8:16].sum(1) > 0).long()
mlp = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 1024),
                          torch.nn.ReLU(), torch.nn.Linear(1024, 4))
losses, w, s = train(mlp, lambda i: (X[(i * 256) % 4096:][:256], Y[(i * 256) % 4096:][:256]), 16, 1e-3)
print("mlp losses", " ".join(repr(v) for v in losses))
print("mlp weights", w, "adam", s)

# A convolutional net on 32x32 images: im2col buffers, pooling, batch norm.
I = torch.randn(512, 3, 32, 32, generator=g)
L = torch.randint(0, 10, (512,), generator=g)
cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.BatchNorm2d(32),
                          torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Conv2d(32, 64, 3, padding=1),
                          torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(),
                          torch.nn.Linear(1024, 10))
losses, w, s = train(cnn, lambda i: (I[(i * 64) % 512:][:64], L[(i * 64) % 512:][:64]), 6, 1e-3)
print("cnn losses", " ".join(repr(v) for v in losses))
print("cnn weights", w, "adam", s)

# Saved and loaded back, as a checkpoint.
import io
buf = io.BytesIO()
torch.save({"mlp": mlp.state_dict(), "cnn": cnn.state_dict()}, buf)
back = torch.load(io.BytesIO(buf.getvalue()))
print("checkpoint", len(buf.getvalue()), digest(back["mlp"].values()), digest(back["cnn"].values()))
sys.stdout.flush()
