"""GPU check, PyTorch graph capture (run.sh: without the shim, then with it
and DSP_MALLOC_MIN=1M): tensor.is_pinned() inside torch.cuda.graph() asks
cudaPointerGetAttributes, which the driver allows during a capture; with the
shim the answer must be the same and must not invalidate the capture. A
pinned tensor and a plain CPU tensor (born pinned under hints) are both
asked; the graph then replays and its result is checked."""
import gpucheck as g

torch = g.need_torch_cuda()
n = 4 * g.MiB
pinned = torch.ones(n, dtype=torch.float32).pin_memory()
plain = torch.ones(n, dtype=torch.float32)  # hinted under DSP_MALLOC_MIN=1M
x = torch.ones(n, device="cuda")
s = torch.cuda.Stream()
with torch.cuda.stream(s):  # warm-up on a side stream, as torch's graph docs do
    y = x * 2
torch.cuda.current_stream().wait_stream(s)
torch.cuda.synchronize()
graph = torch.cuda.CUDAGraph()
answers = {}
try:
    with torch.cuda.graph(graph):
        y = x * 2
        answers["pinned"] = pinned.is_pinned()
        answers["plain"] = plain.is_pinned()
    captured = True
except RuntimeError as e:
    print("capture failed:", e)
    captured = False
ok = captured and answers.get("pinned") is True
g.figure("capture_is_pinned_ok", int(ok), "flag")
g.figure("capture_plain_is_pinned", int(bool(answers.get("plain"))), "flag")
g.check(ok, "is_pinned() inside a capture answers True for a pinned tensor")
replay = False
if captured:
    x.fill_(3.0)
    graph.replay()
    torch.cuda.synchronize()
    replay = bool(torch.all(y == 6.0).item())
g.figure("capture_replay_ok", int(replay), "flag")
g.check(replay, "the captured graph replays with the new input")
g.done("torch_capture_check")
