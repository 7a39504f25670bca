// Model files (train/model_file.h): the zoo read from its embedded TOML is exactly the zoo that was
// built in code, every mistake in a file is named, a file's model trains, ResolveModelSpec checks
// a file against the data, and ModelSpecToToml reads back to the same spec.
#include "train/model_file.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "train/data/synthetic.h"
#include "train/native_trainer.h"

namespace tributary {
namespace {

// The zoo as ModelSpecByName built it in code before the zoo became TOML; the parsed zoo must equal
// it field by field, or checkpoints and recorded runs would change.
LayerSpec Dense(int64_t out, std::string name) {
  LayerSpec l;
  l.kind = LayerKind::kDense;
  l.out_features = out;
  l.name = std::move(name);
  return l;
}
LayerSpec Conv(int64_t out, int64_t k, int64_t pad, std::string name) {
  LayerSpec l;
  l.kind = LayerKind::kConv2D;
  l.out_channels = out;
  l.kernel = k;
  l.padding = pad;
  l.name = std::move(name);
  return l;
}
LayerSpec Pool(int64_t k) {
  LayerSpec l;
  l.kind = LayerKind::kMaxPool2D;
  l.kernel = k;
  return l;
}
LayerSpec Simple(LayerKind kind) {
  LayerSpec l;
  l.kind = kind;
  return l;
}

ModelSpec CodeBuiltZoo(const std::string& name, Shape3 input, int k) {
  ModelSpec s;
  s.name = name;
  s.input = input;
  s.num_classes = k;
  s.cut = 3;  // after the first block (dense + relu; conv + relu + pool)
  const LayerSpec relu = Simple(LayerKind::kReLU), flat = Simple(LayerKind::kFlatten);
  if (name == "mlp") {
    s.layers = {flat, Dense(200, "fc1"), relu, Dense(200, "fc2"), relu, Dense(k, "fc3")};
  } else if (name == "cnn") {
    s.layers = {
        Conv(32, 5, 2, "conv1"), relu, Pool(2),        Conv(64, 5, 2, "conv2"), relu, Pool(2), flat,
        Dense(512, "fc1"),       relu, Dense(k, "fc2")};
  } else {
    s.layers = {Conv(6, 5, 2, "conv1"),
                relu,
                Pool(2),
                Conv(16, 5, 0, "conv2"),
                relu,
                Pool(2),
                flat,
                Dense(120, "fc1"),
                relu,
                Dense(84, "fc2"),
                relu,
                Dense(k, "fc3")};
  }
  return s;
}

TEST(ModelZooTest, ParsedZooEqualsTheCodeBuiltZooBitForBit) {
  EXPECT_EQ(ModelNames(), (std::vector<std::string>{"mlp", "cnn", "lenet"}));
  const std::pair<Shape3, int> datas[] = {{{28, 28, 1}, 10}, {{16, 16, 1}, 10}, {{32, 32, 3}, 100}};
  for (const std::string& name : ModelNames()) {
    for (const auto& [shape, k] : datas) {
      Result<ModelSpec> parsed = ModelSpecByName(name, shape, k);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      const ModelSpec built = CodeBuiltZoo(name, shape, k);
      EXPECT_EQ(*parsed, built) << name;
      EXPECT_EQ(*ParameterLayout(*parsed), *ParameterLayout(built)) << name;
      for (uint64_t seed : {0u, 1u, 42u})
        EXPECT_EQ(*InitWeights(*parsed, seed), *InitWeights(built, seed)) << name << " " << seed;
      Result<ModelSpec> resolved = ResolveModelSpec(name, shape, k);
      ASSERT_TRUE(resolved.ok()) << resolved.status();
      EXPECT_EQ(*resolved, built);
    }
  }
}

TEST(ModelZooTest, InitialWeightsMatchTheRecordedHashes) {
  // content_hash() of InitWeights(ModelSpecByName(name), 1), recorded from the code-built zoo.
  EXPECT_EQ(InitWeights(*ModelSpecByName("mlp"), 1)->content_hash(), 0xd97601e36d483678u);
  EXPECT_EQ(InitWeights(*ModelSpecByName("cnn"), 1)->content_hash(), 0x387ee51cc8feb395u);
  EXPECT_EQ(InitWeights(*ModelSpecByName("lenet"), 1)->content_hash(), 0x0fb4544f3d13aee4u);
}

TEST(ModelZooTest, ShapeErrorsNameTheBuiltInModelAndTheLayer) {
  Result<ModelSpec> r = ModelSpecByName("lenet", {8, 8, 1}, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "built-in model 'lenet': layer 3 (Conv2D): kernel 5 is larger than its input 4x4x6 "
            "padded by 0");
  EXPECT_EQ(ModelSpecByName("resnet").status().code(), StatusCode::kInvalidArgument);
}

TEST(ModelFileTest, ParsesTheDocumentedFormat) {
  Result<ModelSpec> r = ParseModelToml(R"(
# comment
name = "logreg"
input = [28, 28, 1]
classes = 10
[[layers]]
type = "flatten"
[[layers]]
type = "Dense"
units = 10
name = "fc1"
)",
                                       "logreg.toml", {8, 8, 1}, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  ModelSpec want;
  want.name = "logreg";
  want.input = {28, 28, 1};
  want.num_classes = 10;
  want.layers = {Simple(LayerKind::kFlatten), Dense(10, "fc1")};
  EXPECT_EQ(*r, want);
}

TEST(ModelFileTest, LeftOutKeysTakeTheirDefaults) {
  // No name, input or classes; the last layer's units are the class count; unnamed layers are
  // numbered by kind; types in any case; inline tables work as well as [[layers]].
  Result<ModelSpec> r = ParseModelToml(R"(layers = [
  { type = "CONV2D", filters = 4, kernel = 3 },
  { type = "ReLU" },
  { type = "MaxPool2D", size = 2 },
  { type = "conv2d", filters = 8, kernel = 3, padding = 1 },
  { type = "flatten" },
  { type = "dense", units = 16 },
  { type = "dense" },
])",
                                       "models/tiny.toml", {10, 10, 2}, 5);
  ASSERT_TRUE(r.ok()) << r.status();
  ModelSpec want;
  want.name = "tiny";
  want.input = {10, 10, 2};
  want.num_classes = 5;
  want.layers = {Conv(4, 3, 0, "conv1"), Simple(LayerKind::kReLU),    Pool(2),
                 Conv(8, 3, 1, "conv2"), Simple(LayerKind::kFlatten), Dense(16, "fc1"),
                 Dense(5, "fc2")};
  EXPECT_EQ(*r, want);
  EXPECT_EQ(ParameterLayout(*r)->front().second, (std::vector<int64_t>{4, 3, 3, 2}));
}

TEST(ModelFileTest, DigitNamesGivePyTorchSequentialTensorNames) {
  Result<ModelSpec> r = ParseModelToml(R"(input = [784]
layers = [
  { type = "flatten" },
  { type = "dense", units = 32, name = "0" },
  { type = "relu" },
  { type = "dense", units = 10, name = "2" },
  { type = "relu" },
  { type = "dense", units = 10, name = "classifier.4" },
])",
                                       "seq.toml");
  ASSERT_TRUE(r.ok()) << r.status();
  const ModelWeights::LayoutSpec layout = *ParameterLayout(*r);
  std::vector<std::string> names;
  for (const auto& [name, shape] : layout) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias",
                                             "classifier.4.weight", "classifier.4.bias"}));
}

// Each bad file fails with InvalidArgument whose message names the source, the place and the
// mistake.
TEST(ModelFileTest, EveryMistakeIsNamed) {
  const std::string dense = "[[layers]]\ntype = \"dense\"\n";
  const std::pair<std::string, std::string> cases[] = {
      {"clases = 10\n" + dense,
       "m.toml:1: unknown key 'clases' (a model file has name, input, "
       "classes, cut, loss and layers)"},
      {"loss = \"hinge\"\n" + dense,
       "m.toml:1: key 'loss' must be \"cross_entropy\" (softmax cross-entropy, the default), "
       "\"mse\" (mean squared error) or \"bce\" (binary cross-entropy), each against the "
       "one-hot label"},
      {"cut = 1\n[[layers]]\ntype = \"flatten\"\n" + dense,
       "m.toml:1: a cut at layer 1 leaves the device part without parameters"},
      {"cut = 2\n" + dense, "m.toml:1: a cut needs a layer on each side, and it has one"},
      {"[model]\nname = \"x\"\n" + dense, "m.toml:1: unknown key 'model'"},
      {"[[layers]]\ntype = \"flatten\"\n[[layers]]\ntype = \"dense\"\nunit = 10\nunits = 10\n",
       "m.toml:5: layer 1 (Dense): unknown key 'unit' (a dense layer takes type, units, name and "
       "frozen)"},
      {"[[layers]]\ntype = \"relu\"\nname = \"r\"\n" + dense,
       "m.toml:3: layer 0 (ReLU): unknown key 'name' (a relu layer takes only its type)"},
      {"[[layers]]\nunits = 10\n",
       "m.toml:1: layer 0: missing key 'type' (dense, conv2d, maxpool2d, relu, flatten, sigmoid, "
       "tanh, gelu, avgpool2d, globalavgpool, groupnorm, layernorm, conv1d, depthwiseconv2d, "
       "embedding, lstm, gru, dropout or add)"},
      {"[[layers]]\ntype = \"add\"\n" + dense, "m.toml:1: layer 0 (Add): missing key 'from'"},
      {"input = [6]\n[[layers]]\ntype = \"embedding\"\nvocab = 4\ndim = 2\npad = 4\n" + dense,
       "m.toml: layer 0 (Embedding): pad = 4 is not a token id (0 to 3)"},
      {"input = [6]\n[[layers]]\ntype = \"embedding\"\nvocab = 4\ndim = 2\npad = 3\n[[layers]]\n"
       "type = \"conv1d\"\nfilters = 2\nkernel = 3\n[[layers]]\ntype = \"lstm\"\nunits = 2\n" +
           dense,
       "m.toml: layer 2 (LSTM): reads 4 steps, but the embedding's pad gives lengths of its 6 "
       "positions: keep the steps"},
      {"input = [4]\n[[layers]]\ntype = \"dense\"\nunits = 4\n[[layers]]\ntype = \"add\"\n"
       "from = 1\n" +
           dense,
       "m.toml: layer 1 (Add): from = 1 must name an earlier layer (0 to 0)"},
      {"input = [4]\n[[layers]]\ntype = \"dense\"\nunits = 3\n[[layers]]\ntype = \"dense\"\n"
       "units = 4\n[[layers]]\ntype = \"add\"\nfrom = 0\n" +
           dense,
       "m.toml: layer 2 (Add): adds layer 0's output (1x1x3) to an input of 1x1x4: the shapes "
       "must be equal"},
      {"[[layers]]\ntype = \"dropout\"\n" + dense,
       "m.toml:1: layer 0 (Dropout): missing key 'rate'"},
      {"[[layers]]\ntype = \"dropout\"\nrate = 1.0\n" + dense,
       "m.toml:3: layer 0 (Dropout): key 'rate' must be a number in [0, 1)"},
      {"[[layers]]\ntype = \"dropout\"\nrate = -0.1\n" + dense,
       "m.toml:3: layer 0 (Dropout): key 'rate' must be a number in [0, 1)"},
      {"[[layers]]\ntype = \"dropout\"\nrate = \"half\"\n" + dense,
       "m.toml:3: layer 0 (Dropout): key 'rate' must be a number in [0, 1)"},
      {"[[layers]]\ntype = \"dropout\"\nrate = 0.5\nname = \"d\"\n" + dense,
       "m.toml:4: layer 0 (Dropout): unknown key 'name' (a dropout layer takes type and rate)"},
      {"[[layers]]\ntype = \"lstm\"\nreturn_sequences = 1\nunits = 4\n" + dense,
       "m.toml:3: layer 0 (LSTM): key 'return_sequences' must be true or false"},
      {"[[layers]]\ntype = \"lstm\"\n" + dense, "m.toml:1: layer 0 (LSTM): missing key 'units'"},
      {"input = [8]\n[[layers]]\ntype = \"flatten\"\n[[layers]]\ntype = \"embedding\"\nvocab = 4\n"
       "dim = 2\n" +
           dense,
       "m.toml: layer 1 (Embedding): must be the first layer (its input is token ids)"},
      {"[[layers]]\ntype = \"embedding\"\nvocab = 16777217\ndim = 2\n" + dense,
       "m.toml:3: layer 0 (Embedding): key 'vocab' = 16777217 is out of range [1, 16777216]"},
      {"[[layers]]\ntype = \"embedding\"\nvocab = 4\n" + dense,
       "m.toml:1: layer 0 (Embedding): missing key 'dim'"},
      {"input = [4, 3, 1]\n[[layers]]\ntype = \"conv1d\"\nfilters = 2\nkernel = 5\n" + dense,
       "m.toml: layer 0 (Conv1D): kernel 5 is larger than its input 4x3x1 padded by 0 (a sequence "
       "of its 4 rows)"},
      {"[[layers]]\ntype = \"gelu\"\nname = \"g\"\n" + dense,
       "m.toml:3: layer 0 (GELU): unknown key 'name' (a gelu layer takes only its type)"},
      {"[[layers]]\ntype = \"batchnorm\"\n", "m.toml:2: layer 0: unknown type 'batchnorm'"},
      {"[[layers]]\ntype = 3\n", "m.toml:2: layer 0: key 'type' must be a string"},
      {"[[layers]]\ntype = \"flatten\"\n[[layers]]\ntype = \"dense\"\n" + dense,
       "m.toml:3: layer 1 (Dense): missing key 'units' (only the last layer may leave it out"},
      {"[[layers]]\ntype = \"conv2d\"\nfilters = 4\n" + dense,
       "m.toml:1: layer 0 (Conv2D): missing key 'kernel'"},
      {"[[layers]]\ntype = \"maxpool2d\"\n" + dense,
       "m.toml:1: layer 0 (MaxPool2D): missing key 'size'"},
      {"[[layers]]\ntype = \"dense\"\nunits = \"ten\"\n",
       "m.toml:3: layer 0 (Dense): key 'units' must be an integer"},
      {"[[layers]]\ntype = \"dense\"\nunits = 10.0\n",
       "m.toml:3: layer 0 (Dense): key 'units' must be an integer"},
      {"[[layers]]\ntype = \"dense\"\nunits = 0\n",
       "m.toml:3: layer 0 (Dense): key 'units' must be positive, not 0"},
      {"[[layers]]\ntype = \"conv2d\"\nfilters = 4\nkernel = 3\npadding = -1\n" + dense,
       "m.toml:5: layer 0 (Conv2D): key 'padding' = -1 is out of range [0, 1024]"},
      {"[[layers]]\ntype = \"conv2d\"\nfilters = 4\nkernel = 3\nname = \"fc1\"\n" + dense,
       "m.toml:6: layer 1 (Dense): its default name 'fc1' is already layer 0's (tensor names "
       "must differ)"},
      {"layers = [{type = \"flatten\"}, {type = \"dense\", units = 5, name = \"a\"},\n"
       "          {type = \"dense\", name = \"a\"}]\n",
       "m.toml:2: layer 2 (Dense): name 'a' is already layer 1's"},
      {"[[layers]]\ntype = \"dense\"\nname = \"a b\"\n",
       "m.toml:3: layer 0 (Dense): name 'a b' must be 1 to 128 letters, digits, '_', '-' or '.'"},
      {"[[layers]]\ntype = \"dense\"\nname = \".a\"\n", "layer 0 (Dense): name '.a' must be"},
      {"[[layers]]\ntype = \"dense\"\nname = \"\"\n", "layer 0 (Dense): name '' must be"},
      {"name = \"\"\n" + dense, "m.toml:1: key 'name' must be a string of 1 to 128 printable"},
      {"input = [28, 28]\n" + dense,
       "m.toml:1: key 'input' must be [features] or [height, width, channels]"},
      {"input = [28, 0, 1]\n" + dense, "key 'input' must be"},
      {"input = 784\n" + dense, "key 'input' must be"},
      {"classes = 0\n" + dense, "m.toml:1: key 'classes' must be positive, not 0"},
      {"classes = \"ten\"\n" + dense, "m.toml:1: key 'classes' must be an integer"},
      {"name = \"x\"\n", "m.toml: missing key 'layers'"},
      {"layers = []\n", "m.toml:1: key 'layers' must be a non-empty array of tables"},
      {"layers = 3\n", "key 'layers' must be a non-empty array of tables"},
      {"layers = [1, 2]\n", "m.toml:1: layer 0 must be a table"},
      {"[[layers]]\ntype = \"flatten\"\n[[layers]]\ntype = \"dense\"\nunits = 12\n",
       "m.toml: last layer must produce 10 logits (one per class), not 12 (1x1x12)"},
      {"input = [4, 4, 1]\n[[layers]]\ntype = \"conv2d\"\nfilters = 2\nkernel = 5\n" + dense,
       "m.toml: layer 0 (Conv2D): kernel 5 is larger than its input 4x4x1 padded by 0"},
      {"input = [4, 4, 1]\n[[layers]]\ntype = \"maxpool2d\"\nsize = 8\n" + dense,
       "m.toml: layer 0 (MaxPool2D): window 8 does not fit its input 4x4x1"},
      {"input = [1048576]\n[[layers]]\ntype = \"dense\"\nunits = 1048576\n" + dense,
       "m.toml: the model has over 4294967296 parameters by layer 0 (Dense)"},
      {"input = [2048]\nlayers = [{type = \"conv2d\", filters = 1048576, kernel = 1024, "
       "padding = 512}, {type = \"dense\"}]\n",
       "m.toml: the model has over 4294967296 parameters by layer 0 (Conv2D)"},
      {"input = [65536, 65536, 1]\n" + dense,
       "m.toml:1: key 'input' [65536, 65536, 1] has 4294967296 values per example"},
      {"[[layers]]\ntype = \"dense\"\nunits = 10\n[[layers]\n", "m.toml:4:"},  // TOML syntax
  };
  for (const auto& [text, want] : cases) {
    Result<ModelSpec> r = ParseModelToml(text, "m.toml");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(r.status().message().find(want), std::string::npos)
        << "file:\n"
        << text << "\nwant: " << want << "\ngot:  " << r.status().message();
  }
}

TEST(ModelFileTest, BoundsTheFileSizeAndTheLayerCount) {
  std::string many;
  for (size_t i = 0; i < kMaxModelLayers; ++i) many += "[[layers]]\ntype = \"relu\"\n";
  many += "[[layers]]\ntype = \"dense\"\n";
  Result<ModelSpec> r = ParseModelToml(many, "m.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the model has 1025 layers; at most 1024"), std::string::npos)
      << r.status();
  const std::string big(kMaxModelFileBytes + 1, '#');
  EXPECT_EQ(ParseModelToml(big, "m.toml").status().code(), StatusCode::kOutOfRange);
}

TEST(ModelFileTest, ToTomlReadsBackToTheSameSpec) {
  std::vector<ModelSpec> specs;
  for (const std::string& name : ModelNames()) {
    specs.push_back(*ModelSpecByName(name));
    specs.push_back(*ModelSpecByName(name, {32, 32, 3}, 100));
  }
  ModelSpec flat;
  flat.name = "flat \"quoted\" name";
  flat.input = {1, 1, 20};
  flat.num_classes = 3;
  flat.layers = {Dense(7, "0"), Simple(LayerKind::kReLU), Dense(3, "head.2")};
  specs.push_back(flat);
  ModelSpec dropped = flat;  // a dropout's rate reads back exactly
  LayerSpec dropout = Simple(LayerKind::kDropout);
  dropout.rate = 0.3f;
  dropped.layers = {Dense(7, "0"), Simple(LayerKind::kReLU), dropout, Dense(3, "3")};
  specs.push_back(dropped);
  ModelSpec residual = flat;  // an add's source reads back
  LayerSpec add = Simple(LayerKind::kAdd);
  add.from = 1;
  residual.layers = {Dense(7, "0"), Simple(LayerKind::kReLU), Dense(7, "2"), add, Dense(3, "4")};
  specs.push_back(residual);
  ModelSpec smooth = flat;  // every activation's type reads back
  smooth.layers = {
      Dense(7, "0"), Simple(LayerKind::kSigmoid), Dense(6, "1"), Simple(LayerKind::kTanh),
      Dense(5, "2"), Simple(LayerKind::kGelu),    Dense(3, "3")};
  specs.push_back(smooth);
  ModelSpec pooled;  // average pooling, windowed and global
  pooled.name = "pooled";
  pooled.input = {8, 8, 1};
  pooled.num_classes = 3;
  LayerSpec avg = Pool(2);
  avg.kind = LayerKind::kAvgPool2D;
  LayerSpec group = Simple(LayerKind::kGroupNorm), layer = Simple(LayerKind::kLayerNorm);
  group.groups = 2;
  group.name = "gn";
  layer.name = "ln";
  pooled.layers = {Conv(4, 3, 1, "c"), group, avg, Simple(LayerKind::kGlobalAvgPool), layer,
                   Dense(3, "d")};
  ASSERT_EQ(LayerOutputShapes(pooled)->at(3), (Shape3{1, 1, 4}));
  specs.push_back(pooled);
  ModelSpec sequence;  // Conv1D over 32 steps of 6 channels
  sequence.name = "sequence";
  sequence.input = {32, 6, 1};
  sequence.num_classes = 4;
  LayerSpec c1 = Conv(8, 5, 2, "t1"), c2 = Conv(8, 3, 0, "t2");
  c1.kind = c2.kind = LayerKind::kConv1D;
  sequence.layers = {c1, Simple(LayerKind::kReLU), c2, Simple(LayerKind::kGlobalAvgPool),
                     Dense(4, "head")};
  ASSERT_EQ(LayerOutputShapes(sequence)->at(2), (Shape3{30, 1, 8}));
  const ModelWeights::LayoutSpec layout = *ParameterLayout(sequence);
  EXPECT_EQ(layout[0].second, (std::vector<int64_t>{8, 5, 6}));  // [filters, kernel, channels]
  EXPECT_EQ(layout[2].second, (std::vector<int64_t>{8, 3, 8}));
  specs.push_back(sequence);
  ModelSpec separable = pooled;  // depthwise then pointwise (a 1x1 conv2d)
  separable.name = "separable";
  LayerSpec depthwise = Simple(LayerKind::kDepthwiseConv2D);
  depthwise.kernel = 3;
  depthwise.padding = 1;
  depthwise.name = "dw";
  separable.layers = {Conv(4, 3, 1, "c"), depthwise, Conv(6, 1, 0, "pw"),
                      Simple(LayerKind::kGlobalAvgPool), Dense(3, "d")};
  ASSERT_EQ(LayerOutputShapes(separable)->at(1), (Shape3{8, 8, 4}));
  EXPECT_EQ(ParameterLayout(separable)->at(2).second, (std::vector<int64_t>{4, 3, 3, 1}));
  specs.push_back(separable);
  ModelSpec tokens;  // an embedding of 16 token ids into 8 values each, then a conv1d over them
  tokens.name = "tokens";
  tokens.input = {16, 1, 1};
  tokens.num_classes = 5;
  LayerSpec embed = Simple(LayerKind::kEmbedding), over = Conv(6, 3, 1, "t");
  embed.vocab = 40;
  embed.out_features = 8;
  embed.name = "embed";
  over.kind = LayerKind::kConv1D;
  tokens.layers = {embed, over, Simple(LayerKind::kGlobalAvgPool), Dense(5, "head")};
  ASSERT_EQ(LayerOutputShapes(tokens)->at(0), (Shape3{16, 1, 8}));
  EXPECT_EQ(ParameterLayout(tokens)->at(0),
            (std::pair<std::string, std::vector<int64_t>>{"embed.weight", {40, 8}}));
  EXPECT_EQ(ParameterLayout(tokens)->at(1).second, (std::vector<int64_t>{6, 3, 8}));
  specs.push_back(tokens);
  ModelSpec recurrent = tokens;  // the embedded tokens through two LSTMs: every step, then the last
  recurrent.name = "recurrent";
  LayerSpec all = Simple(LayerKind::kLstm), last = Simple(LayerKind::kLstm);
  all.out_features = 12;
  all.return_sequences = true;
  all.name = "0";
  last.out_features = 7;
  last.name = "rnn";
  LayerSpec gru = Simple(LayerKind::kGru);
  gru.out_features = 9;
  gru.return_sequences = true;
  gru.name = "g";
  recurrent.layers = {embed, all, last, Dense(5, "head")};
  const std::vector<Shape3> shapes = *LayerOutputShapes(recurrent);
  EXPECT_EQ(shapes[1], (Shape3{16, 1, 12}));
  EXPECT_EQ(shapes[2], (Shape3{1, 1, 7}));
  const ModelWeights::LayoutSpec lstm_layout = *ParameterLayout(recurrent);
  ASSERT_EQ(lstm_layout.size(), 1u + 4 + 4 + 2);
  EXPECT_EQ(lstm_layout[1],
            (std::pair<std::string, std::vector<int64_t>>{"0.weight_ih_l0", {48, 8}}));
  EXPECT_EQ(lstm_layout[2].second, (std::vector<int64_t>{48, 12}));
  EXPECT_EQ(lstm_layout[4].first, "0.bias_hh_l0");
  EXPECT_EQ(lstm_layout[5],
            (std::pair<std::string, std::vector<int64_t>>{"rnn.weight_ih_l0", {28, 12}}));
  specs.push_back(recurrent);
  ModelSpec gated = recurrent;  // a GRU over every step, then the LSTM's last
  gated.name = "gated";
  gated.layers = {embed, gru, last, Dense(5, "head")};
  const ModelWeights::LayoutSpec gru_layout = *ParameterLayout(gated);
  EXPECT_EQ(LayerOutputShapes(gated)->at(1), (Shape3{16, 1, 9}));
  EXPECT_EQ(gru_layout[1],
            (std::pair<std::string, std::vector<int64_t>>{"g.weight_ih_l0", {27, 8}}));
  EXPECT_EQ(gru_layout[2].second, (std::vector<int64_t>{27, 9}));
  EXPECT_EQ(gru_layout[4].second, (std::vector<int64_t>{27}));
  specs.push_back(gated);
  ModelSpec padded = gated;  // the embedding's pad reads back
  padded.name = "padded";
  padded.layers[0].pad = 39;
  EXPECT_EQ(SequencePositions(padded), 16);
  EXPECT_EQ(SequencePositions(gated), 0);
  specs.push_back(padded);
  for (LossKind kind : {LossKind::kMeanSquaredError, LossKind::kBinaryCrossEntropy}) {
    ModelSpec other = flat;  // a loss other than cross-entropy is written out and read back
    other.loss = kind;
    specs.push_back(other);
  }
  ModelSpec head_only = flat;  // a frozen layer reads back frozen
  head_only.layers[0].frozen = true;
  specs.push_back(head_only);
  for (const ModelSpec& spec : specs) {
    const std::string text = ModelSpecToToml(spec);
    // Different defaults show that the text states everything.
    Result<ModelSpec> back = ParseModelToml(text, "printed.toml", {5, 5, 5}, 2);
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
    EXPECT_EQ(*back, spec) << text;
  }
  EXPECT_NE(ModelSpecToToml(flat).find("input = [20]\n"), std::string::npos);
}

class ModelFileOnDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("trib_model_file_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(ModelFileOnDiskTest, ResolveChecksAFileAgainstTheData) {
  const std::string body = "[[layers]]\ntype = \"flatten\"\n[[layers]]\ntype = \"dense\"\n";
  const std::string stated = Write("stated.toml", "input = [28, 28, 1]\nclasses = 10\n" + body);
  const std::string open = Write("open.toml", body);
  const std::string flat = Write("flat.toml", "input = [784]\n" + body);

  Result<ModelSpec> r = ResolveModelSpec(stated, {28, 28, 1}, 10);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->name, "stated");
  r = ResolveModelSpec(stated, {8, 8, 1}, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            stated +
                ": model 'stated' takes input [28, 28, 1], but the data's examples are "
                "[8, 8, 1]");
  r = ResolveModelSpec(stated, {28, 28, 1}, 5);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), stated + ": model 'stated' has 10 classes, but the data has 5");

  // Left out: the data's.
  r = ResolveModelSpec(open, {8, 8, 3}, 4);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->input, (Shape3{8, 8, 3}));
  EXPECT_EQ(r->num_classes, 4);
  EXPECT_EQ(r->layers.back().out_features, 4);

  // A flat input fits data of as many values, and no other.
  r = ResolveModelSpec(flat, {28, 28, 1}, 10);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->input, (Shape3{1, 1, 784}));
  EXPECT_FALSE(ResolveModelSpec(flat, {8, 8, 1}, 10).ok());

  Result<ModelSpec> missing = ResolveModelSpec((dir_ / "none.toml").string(), {28, 28, 1}, 10);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("none.toml"), std::string::npos) << missing.status();

  Result<ModelSpec> unknown = ResolveModelSpec("resnet", {28, 28, 1}, 10);
  EXPECT_EQ(unknown.status().message(),
            "unknown model 'resnet': give a built-in model (mlp, cnn, lenet) or a model file (a "
            "path ending in .toml; docs/models.md)");
  EXPECT_TRUE(IsModelFilePath("m.toml"));
  EXPECT_TRUE(IsModelFilePath("./m"));
  EXPECT_FALSE(IsModelFilePath("mlp"));
}

TEST(ModelFileTest, TheExampleModelsLoad) {
  const char* src = std::getenv("TRIBUTARY_SOURCE_DIR");
  const std::filesystem::path dir = std::filesystem::path(src ? src : ".") / "examples" / "models";
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".toml") continue;
    ++n;
    // char_lstm reads windows of 32 token ids and predicts one of 97; the others take images.
    const bool text = entry.path().stem() == "char_lstm";
    Result<ModelSpec> r = text ? ResolveModelSpec(entry.path().string(), {1, 1, 32}, 97)
                               : ResolveModelSpec(entry.path().string(), {28, 28, 1}, 10);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(InitWeights(*r, 1).ok()) << entry.path();
  }
  EXPECT_GE(n, 6u);
  Result<ModelSpec> logreg = LoadModelFile((dir / "logreg.toml").string());
  ASSERT_TRUE(logreg.ok()) << logreg.status();
  EXPECT_EQ(InitWeights(*logreg, 0)->size(), 7850u);
}

TEST(ModelFileTest, AModelFromAFileTrainsOnTheCpuEngine) {
  SyntheticSpec s;
  s.n = 700;
  s.height = 8;
  s.width = 8;
  s.seed = 3;
  const Dataset all = MakeSyntheticDataset(s);
  std::vector<uint32_t> tr(500), te(200);
  std::iota(tr.begin(), tr.end(), 0u);
  std::iota(te.begin(), te.end(), 500u);
  auto train = std::make_shared<Dataset>(all.Subset(tr));
  auto test = std::make_shared<Dataset>(all.Subset(te));
  Result<ModelSpec> spec = ParseModelToml(R"(
[[layers]]
type = "conv2d"
filters = 4
kernel = 3
padding = 1
[[layers]]
type = "relu"
[[layers]]
type = "maxpool2d"
size = 2
[[layers]]
type = "flatten"
[[layers]]
type = "dense"
)",
                                          "tiny_cnn.toml", {8, 8, 1}, 10);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto trainer = NativeTrainer::Create(*spec, train, test, 1);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  ModelWeights w0 = *(*trainer)->get_parameters();
  EXPECT_NE(w0.find("conv1.weight"), nullptr);
  EXPECT_NE(w0.find("fc1.bias"), nullptr);
  const EvalResult before = *(*trainer)->evaluate(w0, {});
  FitConfig cfg;
  cfg.epochs = 3;
  cfg.batch_size = 20;
  cfg.lr = 0.1f;
  cfg.momentum = 0.9f;
  Result<FitResult> fit = (*trainer)->fit(w0, cfg);
  ASSERT_TRUE(fit.ok()) << fit.status();
  const EvalResult after = *(*trainer)->evaluate(fit->weights, {});
  EXPECT_LT(after.loss, before.loss / 2) << before.loss << " -> " << after.loss;
  EXPECT_GT(after.accuracy, 0.8) << "loss " << after.loss;
}

}  // namespace
}  // namespace tributary
