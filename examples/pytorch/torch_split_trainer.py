"""TorchSplitTrainer: the device part of a split model in PyTorch (split learning; docs/split.md).

The module is the device part only: the layers before the run's cut (for torch_client.py's MLP
and a cut at 3, nn.Sequential(Flatten, Linear, ReLU)), its state_dict named as the whole model
names those tensors ("1.weight", "1.bias"). fit_split() is TorchTrainer's loop with the model cut
in two: each batch's forward ends at the cut, its activations and labels go to the coordinator's
server part (exchange), which computes the rest of the model and the loss, trains itself, and
returns the gradient at the cut; backward starts from that gradient, then SGD steps the device
part with the coordinator's lr, momentum and weight decay. The order of samples is
TorchTrainer's (shuffled with fit.seed).

The U-shaped split (a run with split.head; docs/split.md): given a `head` too (the layers from the
head's cut on, e.g. model[5:], named as the whole model names them), the device holds the front
and the head and keeps the labels. Each batch goes up without labels (exchange.front), the server
part's output comes back, the head computes the loss and its gradient here, that gradient at the
head's input goes up (exchange.head), and the gradient at the first cut comes back for the front.
The parameters are the front's tensors followed by the head's.
"""
import time

import numpy as np
import torch

import tributary as tb
from torch_trainer import make_optimizer


def _head_inputs(head):
    """Values per sample the head takes: its first Linear layer's in_features."""
    for m in head.modules():
        if isinstance(m, torch.nn.Linear):
            return m.in_features
    raise ValueError("the head holds no nn.Linear: pass middle_size")


class TorchSplitTrainer(tb.SplitTrainer):
    def __init__(self, device_part, x, y, head=None, middle_size=None):
        """device_part: the nn.Module before the cut; x: float32 examples, y: labels 0..255;
        head: the layers after the server's part (the U-shaped split), or None."""
        self.model = device_part
        self.head = head
        self.middle_size = (middle_size or _head_inputs(head)) if head is not None else None
        self.x = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        self.y = torch.from_numpy(np.ascontiguousarray(y, dtype=np.int64))
        self.last_fit_seconds = 0.0

    def get_parameters(self):
        params = tb.from_torch(self.model)
        if self.head is not None:
            params.update(tb.from_torch(self.head))  # the front's tensors, then the head's
        return params

    def _load(self, parameters):
        if self.head is None:
            tb.to_torch(parameters, self.model)
            return
        front = set(self.model.state_dict())
        tb.to_torch({k: v for k, v in parameters.items() if k in front}, self.model)
        tb.to_torch({k: v for k, v in parameters.items() if k not in front}, self.head)

    def _u_step(self, xb, yb, exchange):
        """One U-shaped batch: (loss summed over it, correct count)."""
        h = self.model(xb)  # the activations at the first cut
        middle = exchange.front(h.detach().numpy(), self.middle_size)
        m = torch.from_numpy(middle).requires_grad_()
        logits = self.head(m)
        loss = torch.nn.functional.cross_entropy(logits, yb)
        loss.backward()  # the head's gradients, and m.grad: the gradient at the head's cut
        n = len(yb)
        correct = int((logits.argmax(1) == yb).sum())
        gradient = exchange.head(m.grad.numpy(), float(loss) * n, correct)
        h.backward(torch.from_numpy(gradient))
        return float(loss) * n, correct

    def fit_split(self, parameters, config, exchange):
        self._load(parameters)
        t0 = time.perf_counter()
        model, n = self.model, len(self.y)
        params = list(model.parameters())
        if self.head is not None:
            params += list(self.head.parameters())
            self.head.train()
        opt = make_optimizer(params, config)
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
                if self.head is not None:
                    batch_loss, batch_correct = self._u_step(xb, yb, exchange)
                else:
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
        return tb.FitResult(self.get_parameters(), n,
                            {"train_loss": loss_sum / max(seen, 1),
                             "train_accuracy": correct / max(seen, 1)})
