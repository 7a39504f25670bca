"""TorchTrainer: a PyTorch model as a Tributary trainer.

Any torch.nn.Module whose state_dict holds float tensors works: the state_dict's names, shapes
and order are the layout the client declares, so the coordinator's model (run.initial_model, or a
run.model file whose tensors carry the same names) must have them too. fit() is the plain
PyTorch loop -- SGD with the coordinator's lr, momentum and weight decay, the FedProx term when the
run asks for one, batches of fit.batch_size shuffled with fit.seed -- wrapped in the conversions
to and from NumPy. fit.optimizer = adam or adamw trains with torch.optim.Adam / AdamW instead.
"""
import time

import numpy as np
import torch

import tributary as tb


def make_optimizer(parameters, config):
    """The optimizer the coordinator asks for (fit.optimizer: sgd, adam or adamw), in PyTorch."""
    if config.optimizer == "adam":
        return torch.optim.Adam(parameters, lr=config.lr, betas=(config.beta1, config.beta2),
                                eps=config.eps, weight_decay=config.weight_decay)
    if config.optimizer == "adamw":
        return torch.optim.AdamW(parameters, lr=config.lr, betas=(config.beta1, config.beta2),
                                 eps=config.eps, weight_decay=config.weight_decay)
    return torch.optim.SGD(parameters, lr=config.lr, momentum=config.momentum,
                           weight_decay=config.weight_decay)


class TorchTrainer(tb.Trainer):
    def __init__(self, model, x, y, x_eval=None, y_eval=None):
        """x: float32 array of examples ([n, ...] as the model takes them), y: int64 labels."""
        self.model = model
        self.x = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        self.y = torch.from_numpy(np.ascontiguousarray(y, dtype=np.int64))
        self.x_eval = None if x_eval is None else torch.from_numpy(
            np.ascontiguousarray(x_eval, dtype=np.float32))
        self.y_eval = None if y_eval is None else torch.from_numpy(
            np.ascontiguousarray(y_eval, dtype=np.int64))
        self.last_fit_seconds = 0.0  # the training loop alone, for overhead measurements

    def get_parameters(self):
        return tb.from_torch(self.model)

    def train_epochs(self, config):
        """The PyTorch loop: what a plain PyTorch program does for `config.epochs` epochs."""
        model, n = self.model, len(self.y)
        opt = make_optimizer(model.parameters(), config)
        anchor = ([p.detach().clone() for p in model.parameters()]
                  if config.proximal_mu > 0 else None)
        gen = torch.Generator().manual_seed(config.seed)
        loss_fn = torch.nn.CrossEntropyLoss()
        steps, loss_sum, correct, seen = 0, 0.0, 0, 0
        model.train()
        for _ in range(config.epochs):
            order = torch.randperm(n, generator=gen)
            for start in range(0, n, config.batch_size):
                idx = order[start:start + config.batch_size]
                xb, yb = self.x[idx], self.y[idx]
                opt.zero_grad()
                out = model(xb)
                loss = loss_fn(out, yb)
                if anchor is not None:
                    loss = loss + config.proximal_mu / 2 * sum(
                        ((p - a) ** 2).sum() for p, a in zip(model.parameters(), anchor))
                loss.backward()
                opt.step()
                loss_sum += loss.item() * len(yb)
                correct += (out.argmax(1) == yb).sum().item()
                seen += len(yb)
                steps += 1
                if config.max_steps and steps >= config.max_steps:
                    return loss_sum / seen, correct / seen
        return loss_sum / max(seen, 1), correct / max(seen, 1)

    def fit(self, parameters, config):
        tb.to_torch(parameters, self.model)
        t0 = time.perf_counter()
        loss, accuracy = self.train_epochs(config)
        self.last_fit_seconds = time.perf_counter() - t0
        return tb.FitResult(tb.from_torch(self.model), len(self.y),
                            {"train_loss": loss, "train_accuracy": accuracy})

    def evaluate(self, parameters, config):
        if self.x_eval is None:
            raise tb.Error("this client has no evaluation data")
        tb.to_torch(parameters, self.model)
        self.model.eval()
        with torch.no_grad():
            n = len(self.y_eval)
            if config.max_examples:
                n = min(n, config.max_examples)
            out = self.model(self.x_eval[:n])
            loss = torch.nn.functional.cross_entropy(out, self.y_eval[:n]).item()
            accuracy = (out.argmax(1) == self.y_eval[:n]).float().mean().item()
        return tb.EvalResult(loss, accuracy, n)
