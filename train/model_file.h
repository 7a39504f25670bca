// Model files: a network for the native engine written as a layer list in TOML (docs/models.md).
//
//   name = "logreg"        # optional; default: the file's stem
//   input = [28, 28, 1]    # optional: [features] or [height, width, channels]; default: the data's
//   classes = 10           # optional; default: the data's class count
//   cut = 3                # optional: split learning's cut (model_split.h): the device part
//                          # holds layers 0 .. cut-1; both parts must hold parameters
//   [[layers]]
//   type = "flatten"
//   [[layers]]
//   type = "dense"         # dense, conv2d, maxpool2d, avgpool2d, globalavgpool, groupnorm,
//                          # layernorm, relu, sigmoid, tanh, gelu or flatten (any case)
//   units = 10             # may be left out on the last layer: it then produces `classes` logits
//   name = "fc1"           # optional tensor prefix: "fc1.weight", "fc1.bias"
//
// Layer keys: dense takes units and name; conv2d filters, kernel, padding (default 0) and name;
// maxpool2d and avgpool2d size; groupnorm groups and name; layernorm name; globalavgpool, relu,
// sigmoid, tanh, gelu and flatten nothing but their type. An unnamed dense layer is fc1, fc2, ...,
// an unnamed conv2d layer conv1, conv2, ... and an unnamed norm layer norm1, norm2, ... by its
// place among the layers of its kind. A name holds letters, digits, '_', '-' and '.' ("0",
// "features.3" and "fc1" all work), not at either end a '.', so a file can name its tensors as a
// PyTorch state_dict does.
//
// The model zoo (mlp, cnn, lenet; train/model_spec.h) is written in this format, compiled into the
// library, and read by the same parser.
//
// Errors are InvalidArgument (OutOfRange for a file over kMaxModelFileBytes) whose message starts
// with the source (the path) and, where it comes from one line, the line; it names the layer by
// its index among the layers (from 0) and its type, and says what was wrong: a key no layer of
// that type takes (typos are never ignored), a missing or mistyped key, a size out of range, a
// repeated tensor name, a shape that does not fit (LayerOutputShapes), or a last layer that does
// not produce `classes` logits. Thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "train/model_spec.h"
#include "tributary/result.h"

namespace tributary {

inline constexpr size_t kMaxModelFileBytes = size_t{1} << 20;
inline constexpr size_t kMaxModelLayers = 1024;

// Parses a model file's text. `source_name` names it in errors, and its stem is the model's name
// when the file gives none. What the file leaves out comes from `default_input` and
// `default_classes` (the data's); what it states is kept as it is (ResolveModelSpec checks it
// against the data).
Result<ModelSpec> ParseModelToml(std::string_view text, std::string_view source_name,
                                 Shape3 default_input = {28, 28, 1}, int default_classes = 10);

// Reads and parses the file at `path` (NotFound when missing, OutOfRange over 1 MiB).
Result<ModelSpec> LoadModelFile(const std::string& path, Shape3 default_input = {28, 28, 1},
                                int default_classes = 10);

// True when `model` names a model file rather than a zoo model: it contains '/' or ends in ".toml".
bool IsModelFilePath(std::string_view model);

// The model a program's run.model names, for data of the given shape and class count: a zoo model
// (ModelSpecByName) or a model file. A file's input and classes, when it states them, must be the
// data's (an input [features] fits data with height * width * channels == features); the error
// names both. An unknown zoo name fails listing the zoo and how to give a file.
Result<ModelSpec> ResolveModelSpec(std::string_view model, Shape3 data_shape, int data_classes);

// The same for a model file's text (an app that carries the file rather than a path);
// `source_name` names it in errors. OutOfRange over kMaxModelFileBytes.
Result<ModelSpec> ResolveModelText(std::string_view text, std::string_view source_name,
                                   Shape3 data_shape, int data_classes);

// ResolveModelSpec's check of a model file against the data: its input is the data's shape (or
// flat with as many values), and its class count is the data's. InvalidArgument naming both.
Status CheckModelFitsData(const ModelSpec& spec, std::string_view source_name, Shape3 data_shape,
                          int data_classes);

// A model file's `loss` values: "cross_entropy", "mse", "bce"; nullopt for anything else.
std::optional<LossKind> LossKindOf(std::string_view name);
std::string_view LossKindName(LossKind kind);

// The spec as a model file that ParseModelToml reads back to an equal spec: every layer with its
// name and sizes, and the input and class count (a file may drop these to take the data's).
std::string ModelSpecToToml(const ModelSpec& spec);

}  // namespace tributary
