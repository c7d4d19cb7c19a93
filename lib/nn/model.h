// A sequential model over one flat parameter buffer and one flat gradient buffer (one
// allreduce per step), with the activations of the last forward kept for backward.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/nn/layers.h"
#include "lib/nn/tensor.h"

namespace dbs::nn {

class Model {
 public:
  // Builds the layer stack on `input`, allocates the flat buffers, initialises from seed.
  Model(std::string name, Shape input, std::vector<std::unique_ptr<Layer>> layers,
        std::uint64_t seed);

  const std::string& name() const { return name_; }
  Shape input_shape() const { return input_; }
  int classes() const { return static_cast<int>(shapes_.back().size()); }
  std::size_t param_count() const { return params_.size(); }
  std::span<float> params() { return params_; }
  std::span<const float> params() const { return params_; }
  std::span<float> grads() { return grads_; }
  std::span<const float> grads() const { return grads_; }

  // x is (n, input) row after row; returns the logits (n, classes). Keeps activations.
  const Tensor& forward(const float* x, int n, const Context& ctx);
  // Called after layer i's backward, last layer first: grads()[param_offset(i), param_count())
  // are then final, so their exchange may start while the earlier layers still compute.
  using LayerDone = std::function<void(std::size_t layer)>;

  // dlogits is (n, classes) for the last forward; overwrites grads() with the gradient sums.
  void backward(const float* dlogits, const Context& ctx, const LayerDone& done = nullptr);

  // Forward, softmax cross-entropy and backward on one batch. Returns the summed loss; correct
  // (nullable) gets the number of right predictions. grads() holds the summed gradients.
  double loss_and_grads(const float* x, const std::int32_t* labels, int n, const Context& ctx,
                        int* correct = nullptr, const LayerDone& done = nullptr);

  // The first parameter of layer i in params() and grads(); layers are stored in order.
  std::size_t param_offset(std::size_t i) const { return offsets_[i]; }

  // Analytic FLOPs per sample: forward, and forward + backward (the first layer computes no
  // input gradient).
  double forward_flops_per_sample() const;
  double train_flops_per_sample() const;

  struct LayerInfo {
    std::string name;
    Shape in, out;
    std::size_t params;
  };
  std::vector<LayerInfo> layers_info() const;
  std::string summary() const;  // one line per layer, then the parameter count

  // Direct access for per-layer profiling (dbs-bench kernels).
  std::size_t layer_count() const { return layers_.size(); }
  Layer& layer(std::size_t i) { return *layers_[i]; }
  Tensor& activation(std::size_t i) { return acts_[i]; }  // input of layer i (i = size: output)

 private:
  std::string name_;
  Shape input_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<Shape> shapes_;         // shapes_[i] = input of layer i; back() = output
  std::vector<std::size_t> offsets_;  // first parameter of layer i
  std::vector<float> params_, grads_;
  std::vector<Tensor> acts_;  // acts_[i] = input of layer i from the last forward
  Tensor dlogits_, grad_a_, grad_b_;
};

// The names make_model knows, for checking an option before anything starts.
const std::vector<std::string>& model_names();

// Known models: "cnn" (the case-study CNN, 690,590 parameters on 1x28x28) and "lenet" (small,
// for fast tests). Throws ConfigError for an unknown name, listing the known ones.
std::unique_ptr<Model> make_model(const std::string& name, Shape input, int classes,
                                  std::uint64_t seed);

// Weights file: magic "DBSWGT", format version, model name, input shape, per-layer name and
// parameter count, then the parameters (float32, little-endian). Written atomically.
void save_weights(const Model& model, const std::string& path);
// Throws InputError naming the file and the mismatch (magic, version, model, shape, truncation).
void load_weights(Model& model, const std::string& path);

}  // namespace dbs::nn
