// _tributary: the Python bindings of Tributary's client and simulator (pybind11). The package
// `tributary` (python/tributary/__init__.py) re-exports these and adds the pure-Python pieces.
//
// Threading: Client.run()/wait() and simulate() release the GIL while they block, so trainers
// (called from Tributary's threads, taking the GIL) can run; Ctrl-C during Client.run() stops the
// client and raises KeyboardInterrupt.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include "client/client_config.h"
#include "client/client_data.h"
#include "core/config.h"
#include "core/config_schema.h"
#include "core/log.h"
#include "core/stderr_log.h"
#include "py_common.h"
#include "py_split_exchange.h"
#include "py_trainer.h"
#include "sim/mpi_link.h"
#include "sim/simulator.h"
#include "tributary/client.h"
#include "tributary/config.h"
#include "tributary/safetensors.h"

namespace tributary::python {
namespace {

using Ms = std::chrono::milliseconds;

// Destroys a Client without holding the GIL. Its destructor stops and joins the client's threads,
// and one of them may be about to take the GIL (dropping the last reference to the Python trainer
// runs ~PyTrainer, which takes it): destroyed with the GIL held, the two would wait for each
// other. (AClientCannotInflateItsWeight's process once hung under load after its last line, while
// its ten clients were destroyed; this is the way found for that to happen.)
struct DeleteWithoutGil {
  void operator()(Client* client) const {
    py::gil_scoped_release release;
    delete client;
  }
};
using ClientHolder = std::unique_ptr<Client, DeleteWithoutGil>;

Ms FromSeconds(double s, const char* name) {
  // The message says the range it checks (1e30 was told "must be >= 0").
  if (!(s >= 0.0) || s > 1e9)
    throw py::value_error(std::string(name) + " = " + py::repr(py::float_(s)).cast<std::string>() +
                          " must be in [0, 1e9] seconds");
  return Ms(static_cast<int64_t>(s * 1000.0 + 0.5));
}
double ToSeconds(Ms ms) { return static_cast<double>(ms.count()) / 1000.0; }

// Waits for `wait` (which blocks without the GIL) while letting Python handle signals: on
// KeyboardInterrupt (or any exception a signal handler raises) `stop` is called, the wait
// finishes, and the exception propagates.
Status WaitInterruptibly(const std::function<Status()>& wait, const std::function<void()>& stop) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status result;
  std::thread waiter([&] {
    Status s = wait();
    std::lock_guard<std::mutex> lock(mu);
    result = std::move(s);
    done = true;
    cv.notify_all();
  });
  for (;;) {
    {
      py::gil_scoped_release release;
      std::unique_lock<std::mutex> lock(mu);
      if (cv.wait_for(lock, Ms(100), [&] { return done; })) break;
    }
    if (PyErr_CheckSignals() != 0) {
      stop();
      {
        py::gil_scoped_release release;
        waiter.join();
      }
      throw py::error_already_set();
    }
  }
  waiter.join();
  return result;
}

// A Python value as the text ConfigSchema::Set parses.
std::string ConfigText(py::handle v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  return py::str(v).cast<std::string>();
}

// Builds the trainer of each virtual client from a Python callable make(x, y) -> Trainer, where x
// holds the client's examples ([n, height, width, channels] float32) and y its labels ([n] int64).
class PyTrainerFactory final : public TrainerFactory {
 public:
  explicit PyTrainerFactory(py::object make) : make_(std::move(make)) {}
  ~PyTrainerFactory() override {
    py::gil_scoped_acquire gil;
    make_ = py::object();
  }
  bool needs_data() const override { return true; }
  Result<std::shared_ptr<Trainer>> Make(std::shared_ptr<const Dataset> data,
                                        int64_t) const override {
    py::gil_scoped_acquire gil;
    try {
      py::array_t<float> x(
          {static_cast<py::ssize_t>(data->size()), data->height, data->width, data->channels});
      std::copy(data->images.begin(), data->images.end(), x.mutable_data());
      py::array_t<int64_t> y(static_cast<py::ssize_t>(data->size()));
      std::copy(data->labels.begin(), data->labels.end(), y.mutable_data());
      py::object trainer = make_(x, y);
      return std::shared_ptr<Trainer>(std::make_shared<PyTrainer>(std::move(trainer)));
    } catch (const py::error_already_set& e) {
      return Status::Internal("simulate(trainer=...) raised " + DescribePythonError(e));
    } catch (const std::exception& e) {
      return Status::Internal(std::string("simulate(trainer=...): ") + e.what());
    }
  }

 private:
  py::object make_;
};

py::dict RoundToDict(const SimRound& r) {
  py::dict d;
  d["round"] = r.round;
  d["attempts"] = r.attempts;
  d["selected"] = r.selected;
  d["accepted"] = r.accepted;
  d["refused"] = r.refused;
  d["dropped"] = r.dropped;
  d["bytes_up"] = r.bytes_up;
  d["bytes_down"] = r.bytes_down;
  d["sim_seconds"] = r.sim_seconds;
  d["wall_seconds"] = r.wall_seconds;
  d["train_loss"] = r.train_loss;
  if (r.evaluated) {
    d["test_accuracy"] = r.test_accuracy;
    d["test_loss"] = r.test_loss;
  }
  return d;
}

// This process's MPI link when an MPI launcher started it as one of several (mpirun -np P python3
// app.py): made at the first simulate(), finalized when the process exits. Null otherwise.
MpiLink* ProcessRanks() {
  static Result<std::unique_ptr<MpiLink>> link = []() -> Result<std::unique_ptr<MpiLink>> {
    if (MpiLaunchedRanks() <= 1) return std::unique_ptr<MpiLink>();
    return MpiLink::Init(nullptr, nullptr);
  }();
  if (!link.ok()) ThrowStatus(link.status());
  return link->get();
}

py::object Simulate(py::object config, std::string config_file, py::object trainer,
                    std::string final_model, py::object on_round) {
  SimConfig cfg;
  ConfigSchema schema("tributary.simulate");
  BindSimConfig(schema, &cfg);
  if (!config_file.empty()) {
    Config file = Unwrap(Config::LoadFile(config_file));
    Check(schema.Load(file));
  }
  if (!config.is_none()) {
    if (!py::isinstance<py::dict>(config))
      throw py::type_error(
          "simulate(config=...) takes a dict of dotted keys, e.g. "
          "{'run.rounds': 5}");
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(config))
      Check(schema.Set(k.cast<std::string>(), ConfigText(v), "simulate(config=...)"));
  }
  Check(cfg.Validate());
  Check(InitLogging(cfg.log_level));
  MpiLink* ranks = ProcessRanks();
  const bool serves = ranks && ranks->rank() != 0;
  std::unique_ptr<TrainerFactory> factory;
  if (!trainer.is_none()) factory = std::make_unique<PyTrainerFactory>(trainer);
  SimResult result;
  {
    py::gil_scoped_release release;
    // Another rank that cannot go on ends the whole job: rank 0 would wait for it for ever.
    auto end_job = [&](const Status& s) {
      std::fprintf(stderr, "tributary.simulate (rank %d): %s\n", ranks->rank(),
                   s.ToString().c_str());
      ranks->Abort(2);
    };
    Result<DataSplits> data = LoadDataSplits(cfg.data, true, cfg.run.eval_every > 0);
    if (!data.ok()) {
      if (serves) end_job(data.status());
      py::gil_scoped_acquire gil;
      ThrowStatus(data.status());
    }
    Result<std::unique_ptr<Simulator>> sim = Simulator::Create(
        cfg, *data, serves ? std::string() : final_model, nullptr, std::move(factory));
    if (sim.ok()) {
      if (Status s = (*sim)->SetRanks(ranks); !s.ok()) sim = s;
    }
    if (!sim.ok()) {
      if (serves) end_job(sim.status());
      py::gil_scoped_acquire gil;
      ThrowStatus(sim.status());
    }
    if (serves) {
      // Another rank: trains rank 0's jobs until it says stop; rank 0 returns the result.
      Status served = (*sim)->Serve();
      if (!served.ok()) end_job(served);
      py::gil_scoped_acquire gil;
      sim->reset();
      return py::none();
    }
    // An exception in on_round is kept (the rounds go on without the callback) and raised once
    // the run is over: it never unwinds through the simulator.
    std::optional<py::error_already_set> callback_error;
    std::function<void(const SimRound&)> each;
    if (!on_round.is_none()) {
      each = [&on_round, &callback_error](const SimRound& r) {
        py::gil_scoped_acquire gil;
        if (callback_error) return;
        try {
          on_round(RoundToDict(r));
        } catch (py::error_already_set& e) {
          callback_error.emplace(std::move(e));
        }
      };
    }
    // Ctrl-C (or any exception a signal handler raises) asks the simulator to stop after the
    // round in progress, and is raised here once it has (the run is finished as stopped). The
    // run goes on another thread, this one handling the signals; under MPI (which this process
    // initialized for the main thread only, MPI_THREAD_FUNNELED) it stays on this thread, and
    // mpirun delivers Ctrl-C by ending the job.
    Result<SimResult> run = Status::Internal("simulate: the run did not start");
    Simulator* s = sim->get();
    std::atomic<bool> stop{false};
    s->StopWhen(&stop);
    if (ranks) run = s->Run(each);
    py::gil_scoped_acquire gil;
    if (!ranks) {
      try {
        (void)WaitInterruptibly(
            [&] {
              run = s->Run(each);
              return run.status();
            },
            [&stop] { stop = true; });
      } catch (py::error_already_set&) {
        sim->reset();  // its trainers drop their Python objects while the GIL is held
        throw;
      }
    }
    if (callback_error) {
      sim->reset();
      callback_error->restore();
      throw py::error_already_set();
    }
    if (!run.ok()) ThrowStatus(run.status());
    result = std::move(*run);
    sim->reset();  // its trainers drop their Python objects while the GIL is held
  }
  py::dict out;
  py::list rounds;
  for (const SimRound& r : result.rounds) rounds.append(RoundToDict(r));
  out["rounds"] = rounds;
  out["wall_seconds"] = result.wall_seconds;
  out["sim_seconds"] = result.sim_seconds;
  out["model_hash"] = result.model_hash;
  out["final_model"] = WeightsToDict(result.final_model);
  return out;
}

py::tuple ArraysOf(const Dataset& d) {
  py::array_t<float> x({static_cast<py::ssize_t>(d.size()), d.height, d.width, d.channels});
  std::copy(d.images.begin(), d.images.end(), x.mutable_data());
  py::array_t<int64_t> y(static_cast<py::ssize_t>(d.size()));
  std::copy(d.labels.begin(), d.labels.end(), y.mutable_data());
  return py::make_tuple(x, y);
}

py::dict LoadData(py::dict config) {
  ClientConfig c;
  ConfigSchema schema("tributary.load_data");
  BindClientConfig(schema, &c);
  for (auto [k, v] : config)
    Check(schema.Set(k.cast<std::string>(), ConfigText(v), "load_data(config=...)"));
  Result<ClientData> data = [&] {
    py::gil_scoped_release release;
    return LoadClientData(c);
  }();
  ClientData d = Unwrap(std::move(data));
  py::dict out;
  out["train"] = ArraysOf(*d.train);
  out["eval"] = d.eval ? py::object(ArraysOf(*d.eval)) : py::object(py::none());
  out["num_classes"] = d.train->num_classes;
  out["description"] = d.description;
  return out;
}

}  // namespace

PYBIND11_MODULE(_tributary, m) {
  m.doc() = "Tributary's client and simulator, for trainers written in Python";
  m.attr("__version__") = TRIBUTARY_VERSION;
  RegisterError(m);
  PySplitExchange::Register(m);
  // The C++ library is silent unless asked (tributary/log.h). The module asks: a script sees the
  // library's lines at info on stderr (set_log_level's documented default) until it sets another.
  Check(InitLogging("info"));

  py::class_<FitConfig>(m, "FitConfig", "What the coordinator asks of one fit (trainer.h)")
      .def(py::init<>())
      .def_readwrite("epochs", &FitConfig::epochs)
      .def_readwrite("batch_size", &FitConfig::batch_size)
      .def_readwrite("lr", &FitConfig::lr)
      .def_readwrite("momentum", &FitConfig::momentum)
      .def_readwrite("weight_decay", &FitConfig::weight_decay)
      .def_readwrite("proximal_mu", &FitConfig::proximal_mu)
      .def_readwrite("max_steps", &FitConfig::max_steps)
      .def_readwrite("seed", &FitConfig::seed)
      .def_readwrite("optimizer", &FitConfig::optimizer,
                     "the local optimizer: 'sgd' (with momentum), 'adam' or 'adamw'")
      .def_readwrite("beta1", &FitConfig::beta1)
      .def_readwrite("beta2", &FitConfig::beta2)
      .def_readwrite("eps", &FitConfig::eps)
      .def_readwrite("optimizer_state", &FitConfig::optimizer_state,
                     "'reset' (every fit starts the optimizer's state from zero) or 'keep'")
      .def_property_readonly(
          "stop_requested", [](const FitConfig& c) { return c.stop.stop_requested(); },
          "True once the client no longer wants this fit's result (its connection to the "
          "coordinator is gone, or the client is stopping): a fit() that checks it between "
          "batches may return at once, and what it returns then is discarded")
      .def("__repr__", [](const FitConfig& c) {
        return fmt::format(
            "FitConfig(epochs={}, batch_size={}, lr={}, momentum={}, weight_decay={}, "
            "proximal_mu={}, max_steps={}, seed={}, optimizer='{}', beta1={}, beta2={}, eps={})",
            c.epochs, c.batch_size, c.lr, c.momentum, c.weight_decay, c.proximal_mu, c.max_steps,
            c.seed, c.optimizer, c.beta1, c.beta2, c.eps);
      });
  py::class_<EvalConfig>(m, "EvalConfig", "What the coordinator asks of one evaluation")
      .def(py::init<>())
      .def_readwrite("batch_size", &EvalConfig::batch_size)
      .def_readwrite("max_examples", &EvalConfig::max_examples);

  py::class_<TaskReport> report(m, "TaskReport", "What happened with one task (on_task)");
  py::enum_<TaskReport::Kind>(report, "Kind")
      .value("FIT", TaskReport::Kind::kFit)
      .value("EVALUATE", TaskReport::Kind::kEvaluate);
  report.def_readonly("kind", &TaskReport::kind)
      .def_readonly("round", &TaskReport::round)
      .def_readonly("model_version", &TaskReport::model_version)
      .def_readonly("num_examples", &TaskReport::num_examples)
      .def_readonly("loss", &TaskReport::loss)
      .def_readonly("accuracy", &TaskReport::accuracy)
      .def_readonly("seconds", &TaskReport::seconds)
      .def_readonly("update_bytes", &TaskReport::update_bytes)
      .def_readonly("codec", &TaskReport::codec)
      .def_property_readonly("ok", [](const TaskReport& r) { return r.status.ok(); })
      .def_property_readonly("error", [](const TaskReport& r) { return r.status.message(); });

  py::class_<BackoffOptions>(m, "BackoffOptions", "Reconnect policy (client.h)")
      .def(py::init<>())
      .def_property(
          "initial_delay_s", [](const BackoffOptions& b) { return ToSeconds(b.initial_delay); },
          [](BackoffOptions& b, double s) { b.initial_delay = FromSeconds(s, "initial_delay_s"); })
      .def_property(
          "max_delay_s", [](const BackoffOptions& b) { return ToSeconds(b.max_delay); },
          [](BackoffOptions& b, double s) { b.max_delay = FromSeconds(s, "max_delay_s"); })
      .def_readwrite("multiplier", &BackoffOptions::multiplier)
      .def_readwrite("jitter", &BackoffOptions::jitter)
      .def_readwrite("max_attempts", &BackoffOptions::max_attempts)
      .def_readwrite("seed", &BackoffOptions::seed);

  py::class_<ClientOptions>(m, "ClientOptions",
                            "The options of tributary::ClientOptions (client.h); durations in "
                            "seconds")
      .def(py::init<>())
      .def_readwrite("coordinator", &ClientOptions::coordinator)
      .def_readwrite("server_name", &ClientOptions::server_name)
      .def_readwrite("ca_cert_file", &ClientOptions::ca_cert_file)
      .def_readwrite("cert_file", &ClientOptions::cert_file)
      .def_readwrite("key_file", &ClientOptions::key_file)
      .def_readwrite("state_dir", &ClientOptions::state_dir)
      .def_readwrite("device", &ClientOptions::device)
      .def_readwrite("num_examples", &ClientOptions::num_examples)
      .def_readwrite("backoff", &ClientOptions::backoff)
      .def_property(
          "heartbeat_interval_s",
          [](const ClientOptions& o) { return ToSeconds(o.heartbeat_interval); },
          [](ClientOptions& o, double s) {
            o.heartbeat_interval = FromSeconds(s, "heartbeat_interval_s");
          })
      .def_property(
          "connect_timeout_s", [](const ClientOptions& o) { return ToSeconds(o.connect_timeout); },
          [](ClientOptions& o, double s) {
            o.connect_timeout = FromSeconds(s, "connect_timeout_s");
          })
      .def_readwrite("on_task", &ClientOptions::on_task)
      .def_readwrite("split", &ClientOptions::split,
                     "Split learning (docs/split.md): the trainer's model is the device part of "
                     "the run's cut model and every task trains through its fit_split "
                     "(tributary.SplitTrainer); the coordinator's run must be a split run.");

  py::class_<Client, ClientHolder>(
      m, "Client",
      "A federated-learning client over mutual TLS whose trainer is a Python "
      "object (tributary.Trainer)")
      .def(py::init([](ClientOptions options, py::object trainer) {
             return ClientHolder(
                 Unwrap(Client::Create(std::move(options),
                                       std::make_shared<PyTrainer>(std::move(trainer))))
                     .release());
           }),
           py::arg("options"), py::arg("trainer"))
      .def(
          "run",
          [](Client& c) {
            Check(c.start());
            Check(WaitInterruptibly([&c] { return c.wait(); }, [&c] { c.stop(); }));
          },
          "Connects and serves the coordinator until the run is over. Raises tributary.Error "
          "when the run did not complete (the coordinator refused this client's model, the run "
          "failed, the coordinator was unreachable, stop() was called).")
      .def("start", [](Client& c) { Check(c.start()); })
      .def("stop", &Client::stop, py::call_guard<py::gil_scoped_release>())
      .def("wait",
           [](Client& c) {
             Check(WaitInterruptibly([&c] { return c.wait(); }, [&c] { c.stop(); }));
           })
      .def_property_readonly("client_id", &Client::client_id);

  m.def("simulate", &Simulate, py::arg("config") = py::none(), py::arg("config_file") = "",
        py::arg("trainer") = py::none(), py::arg("final_model") = "",
        py::arg("on_round") = py::none(),
        "Runs tributary-sim in this process: the keys of `config` (a dict of dotted keys) over "
        "those of `config_file`; the virtual clients' trainers come from trainer(x, y) when "
        "given, else from sim.trainer. Returns {'rounds': [...], 'final_model': {...}, ...}. "
        "Under an MPI launcher (mpirun -np P python3 app.py, every rank calling simulate the same "
        "way) the clients train on all P processes: rank 0 returns the result, bitwise that of "
        "one process, and the other ranks return None.");

  m.def(
      "set_log_level", [](const std::string& level) { Check(InitLogging(level)); },
      py::arg("level"),
      "The library's log level: trace, debug, info (the default), warn, error. Clients log one "
      "line per task and every connection event at info.");
  m.def("load_data", &LoadData, py::arg("config"),
        "A client's share of a data set, as tributary-client loads it: the data.* keys "
        "(data.dataset, data.partition, data.num_clients, data.client_index, ...). Returns "
        "{'train': (x, y), 'eval': (x, y) or None, 'num_classes': int, 'description': str}; x is "
        "[n, height, width, channels] float32, y is [n] int64.");
  m.def(
      "save_safetensors",
      [](const std::string& path, py::handle weights, const SafetensorsMetadata& metadata) {
        ModelWeights w =
            Unwrap(WeightsFromMapping(weights, "save_safetensors(weights=...) is a value that"));
        Check(SaveSafetensors(w, path, metadata));
      },
      py::arg("path"), py::arg("weights"), py::arg("metadata") = SafetensorsMetadata{},
      "Writes a dict of name -> array as a safetensors file (F32, in the dict's order).");
  m.def(
      "load_safetensors",
      [](const std::string& path) {
        SafetensorsMetadata meta;
        ModelWeights w = Unwrap(LoadSafetensors(path, &meta));
        return py::make_tuple(WeightsToDict(w), meta);
      },
      py::arg("path"),
      "Reads a safetensors file (a Tributary checkpoint's model is under 'model.'): "
      "(dict of name -> float32 array in file order, metadata dict).");
}

}  // namespace tributary::python
