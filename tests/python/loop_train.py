"""The training side the DataLoader test loops share (loop_stream.py,
loop_persistent.py): one epoch over a DataLoader iterator, timed by the
script itself (loop_clock.Steps): the wait is next(), the rest a small
linear model's forward and backward, the simulated GPU's step when
LOOP_SIM_GPU is set, CPU time standing for the rest of a step, and the
optimizer's step.

Must never: read a file (the loader does), or time anything but next() as
the wait.
"""
import torch

from loop_clock import burn, sim_gpu_from_env


class Trainer(object):
    def __init__(self, step_ms):
        self.step_ms = step_ms
        self.model = self.opt = None
        self.gpu = sim_gpu_from_env()  # LOOP_SIM_GPU: on the simulated GPU

    def epoch(self, it, steps):
        """Train on every batch of iterator it, each a step of steps."""
        while True:
            steps.start()
            steps.wait_begin()
            try:
                x = next(it)
            except StopIteration:
                return
            steps.wait_end()
            if self.model is None:
                self.model = torch.nn.Linear(x.shape[1], 1)
                self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-3)
            loss = self.model(x).square().mean()
            if self.gpu is not None:
                self.gpu.step(x.numpy())
            loss.backward()
            burn(self.step_ms)  # the rest of a step's compute
            self.opt.step()
            self.opt.zero_grad()
            # RATIONALE: the step's batch and loss go here, in the step's
            # compute, not at the next `x = next(it)`: a worker's batch
            # lives in shared memory, and freeing it (an munmap) took 30 us
            # a step on the 2-CPU VM inside the script's own wait, after
            # next() had returned (0.1 ms a step with the rest: a 1.5
            # point bias in a 6 ms step's data-wait share)
            x = loss = None
            steps.end()
