"""Tributary: federated learning whose clients train in Python (NumPy, PyTorch, ...).

A client is a Trainer (get_parameters / fit / evaluate on dicts of name -> NumPy array) run by a
Client against a tributary-coordinator over mutual TLS:

    import tributary as tb

    class MyTrainer(tb.Trainer):
        def get_parameters(self):
            return {"weight": w, "bias": b}            # the layout: names, shapes, order
        def fit(self, parameters, config):            # config: tb.FitConfig (epochs, lr, ...)
            ...train from `parameters`...
            return tb.FitResult(new_parameters, num_examples=len(x), metrics={"train_loss": l})
        def evaluate(self, parameters, config):
            return tb.EvalResult(loss, accuracy, num_examples)

    options = tb.ClientOptions(coordinator="coord.example.org:7070", ca_cert_file="ca.crt",
                               cert_file="edge-1.crt", key_file="edge-1.key",
                               num_examples=len(x))
    tb.Client(options, MyTrainer()).run()   # raises tb.Error when the run does not complete

The layout the trainer returns from get_parameters() must be the run's (the coordinator refuses a
client whose tensors differ, naming the first one that does; simulate() checks its first
trainer the same way). simulate() runs many virtual clients in one process; save_safetensors / load_safetensors / load_checkpoint_model move models
to and from the files the coordinator reads and writes. See docs/embedding.md.
"""

from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional

from ._tributary import (  # noqa: F401  (re-exported)
    BackoffOptions,
    Client,
    ClientOptions as _ClientOptions,
    Error,
    EvalConfig,
    SplitExchange,
    FitConfig,
    TaskReport,
    __version__,
    load_data,
    load_safetensors,
    save_safetensors,
    set_log_level,
    simulate,
)

__all__ = [
    "BackoffOptions", "Client", "ClientOptions", "Error", "EvalConfig", "EvalResult", "FitConfig",
    "FitResult", "SplitExchange", "SplitTrainer", "TaskReport", "Trainer", "from_torch", "load_checkpoint_model", "load_data",
    "load_safetensors", "save_safetensors", "set_log_level", "simulate", "to_torch", "__version__",
]


class ClientOptions(_ClientOptions):
    """tributary::ClientOptions; keyword arguments set the fields of the same names.

    Fields: coordinator ("host:port"), server_name, ca_cert_file, cert_file, key_file, state_dir,
    device, num_examples, backoff (BackoffOptions), heartbeat_interval_s, connect_timeout_s,
    on_task (a callable taking a TaskReport, called after every task), split (True: the trainer
    is a SplitTrainer holding the device part of the run's cut model; docs/split.md).
    """

    def __init__(self, **kwargs):
        super().__init__()
        for name, value in kwargs.items():
            if name.startswith("_") or not hasattr(self, name):
                raise TypeError(f"ClientOptions has no field '{name}'")
            setattr(self, name, value)

    def __setattr__(self, name, value):
        # A value of the wrong type names the field and both types (the binding's own error
        # lists a C++ signature and no field).
        try:
            super().__setattr__(name, value)
        except TypeError as e:
            want = type(getattr(self, name, None)).__name__
            raise TypeError(f"ClientOptions.{name} takes a value of type {want}, not "
                            f"{type(value).__name__} ({value!r})") from e


@dataclass
class FitResult:
    """What Trainer.fit returns: the new parameters (not a delta), the number of examples they
    were trained on (the FedAvg weight), and metrics such as train_loss / train_accuracy."""
    parameters: Mapping
    num_examples: int
    metrics: Dict[str, float] = field(default_factory=dict)


@dataclass
class EvalResult:
    """What Trainer.evaluate returns."""
    loss: float
    accuracy: float
    num_examples: int
    metrics: Dict[str, float] = field(default_factory=dict)


class Trainer:
    """The seam between federated rounds and local training (tributary/trainer.h).

    Tributary calls these from its own worker thread, one at a time, holding the GIL:
      get_parameters() -> {name: array}: the current weights; their names, shapes and order are
          the layout declared to the coordinator.
      fit(parameters, config) -> FitResult or (parameters, num_examples[, metrics]): train from
          `parameters` (the global model, in the same layout) with `config` (FitConfig: epochs,
          batch_size, lr, momentum, weight_decay, proximal_mu, max_steps, seed).
      evaluate(parameters, config) -> EvalResult or (loss, accuracy, num_examples[, metrics]).
    An exception is reported to the coordinator as this client's error for that task; the
    client carries on.
    """

    def get_parameters(self) -> Mapping:
        raise NotImplementedError("Trainer.get_parameters")

    def fit(self, parameters: Mapping, config: FitConfig):
        raise NotImplementedError("Trainer.fit")

    def evaluate(self, parameters: Mapping, config: EvalConfig):
        raise Error("this trainer does not evaluate")


class SplitTrainer(Trainer):
    """A trainer of the device part of a split model (split learning; docs/split.md).

    Its client runs with ClientOptions(split=True) against a coordinator whose run sets
    split.mode. get_parameters() returns the device part only: the layers before the run's cut,
    named as the whole model names them. Each task calls

      fit_split(parameters, config, exchange) -> FitResult, as fit() returns it

    which trains the device part from `parameters` batch by batch: forward to the cut, then
    gradient, loss_sum, correct = exchange(activations, labels), where `activations` is the batch's
    output at the cut as floats shaped [n, ...] (a torch tensor as t.detach().numpy()) and
    `labels` its n class labels (0..255); the server part computes the rest of the model and the
    loss, trains itself, and returns the gradient of the batch's mean loss with respect to the
    activations (float32, their shape), with its loss summed over the batch and its count of
    correct predictions. Backpropagate that gradient through the device part (in PyTorch:
    h.backward(torch.from_numpy(gradient))) and step. Report train_loss and train_accuracy from
    the sums. An exchange that fails raises tributary.Error: let it propagate.

    The server sees the activations and the labels (docs/split.md, "What the server learns").
    fit() is not used by a split client; evaluate() evaluates nothing by default (a device part
    cannot classify on its own).
    """

    def fit(self, parameters: Mapping, config: FitConfig):
        raise Error("a SplitTrainer trains through fit_split: run its client with "
                    "ClientOptions(split=True)")

    def fit_split(self, parameters: Mapping, config: FitConfig, exchange: SplitExchange):
        raise NotImplementedError("SplitTrainer.fit_split")


def from_torch(module_or_state_dict) -> Dict:
    """A torch module's (or state_dict's) tensors as {name: float32 NumPy array}, in order."""
    state = module_or_state_dict
    if hasattr(state, "state_dict"):
        state = state.state_dict()
    return {name: t.detach().cpu().float().numpy() for name, t in state.items()}


def to_torch(parameters: Mapping, module) -> None:
    """Loads {name: array} into a torch module (strict: the names and shapes must match)."""
    import torch  # imported here: only PyTorch users need it

    module.load_state_dict(
        {name: torch.from_numpy(arr.copy()) for name, arr in parameters.items()}, strict=True)


def load_checkpoint_model(path: str) -> Dict:
    """The global model in a coordinator checkpoint (output.checkpoint_dir/checkpoint.safetensors)
    or final model file, as {name: array} named as the clients declared the tensors."""
    tensors, _ = load_safetensors(path)
    if any(name.startswith("model.") for name in tensors):
        return {name[len("model."):]: arr for name, arr in tensors.items()
                if name.startswith("model.")}
    return tensors
