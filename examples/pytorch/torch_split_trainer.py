"""TorchSplitTrainer: the device part of a split model in PyTorch (split learning; docs/split.md).

The module is the device part only: the layers before the run's cut (for torch_client.py's MLP
and a cut at 3, nn.Sequential(Flatten, Linear, ReLU)), its state_dict named as the whole model
names those tensors ("1.weight", "1.bias"). fit_split() is TorchTrainer's loop with the model cut
in two: each batch's forward ends at the cut, its activations and labels go to the coordinator's
server part (exchange), which computes the rest of the model and the loss, trains itself, and
returns the gradient at the cut; backward starts from that gradient, then SGD steps the device
part with the coordinator's lr, momentum and weight decay. The order of samples is
TorchTrainer's (shuffled with fit.seed).
"""
import time

import numpy as np
import torch

import tributary as tb
from torch_trainer import make_optimizer


class TorchSplitTrainer(tb.SplitTrainer):
    def __init__(self, device_part, x, y):
        """device_part: the nn.Module before the cut; x: float32 examples, y: labels 0..255."""
        self.model = device_part
        self.x = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        self.y = torch.from_numpy(np.ascontiguousarray(y, dtype=np.int64))
        self.last_fit_seconds = 0.0

    def get_parameters(self):
        return tb.from_torch(self.model)

    def fit_split(self, parameters, config, exchange):
        tb.to_torch(parameters, self.model)
        t0 = time.perf_counter()
        model, n = self.model, len(self.y)
        opt = make_optimizer(model.parameters(), config)
        gen = torch.Generator().manual_seed(config.seed)
        steps, loss_sum, correct, seen = 0, 0.0, 0, 0
        model.train()
        done = False
        for _ in range(config.epochs):
            order = torch.randperm(n, generator=gen)
            for start in range(0, n, config.batch_size):
                idx = order[start:start + config.batch_size]
                xb, yb = self.x[idx], self.y[idx]
                opt.zero_grad()
                h = model(xb)  # the activations at the cut
                gradient, batch_loss, batch_correct = exchange(h.detach().numpy(), yb.numpy())
                h.backward(torch.from_numpy(gradient))
                opt.step()
                loss_sum += batch_loss
                correct += batch_correct
                seen += len(yb)
                steps += 1
                if config.max_steps and steps >= config.max_steps:
                    done = True
                    break
            if done:
                break
        self.last_fit_seconds = time.perf_counter() - t0
        return tb.FitResult(tb.from_torch(model), n,
                            {"train_loss": loss_sum / max(seen, 1),
                             "train_accuracy": correct / max(seen, 1)})
