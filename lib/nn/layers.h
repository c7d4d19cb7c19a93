// Layers: each knows its output shape, its parameters (views into the model's flat buffers),
// its forward and backward pass and its analytic FLOP count.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "lib/nn/kernels.h"
#include "lib/nn/tensor.h"

namespace dbs::nn {

// What a forward or backward pass needs besides the tensors.
struct Context {
  bool training = false;                     // dropout active only when training
  bool reference = false;                    // use ref:: kernels instead of fast:: (tests)
  std::uint64_t seed = 0;                    // run seed (dropout stream)
  std::uint64_t epoch = 0;                   // epoch (dropout stream)
  const std::int64_t* sample_ids = nullptr;  // global index of each sample of the batch
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string name() const = 0;  // e.g. "conv3x3x32"
  virtual Shape output_shape(Shape in) const = 0;
  virtual std::size_t param_count(Shape /*in*/) const { return 0; }
  // Binds the layer to its slices of the flat parameter and gradient buffers.
  virtual void bind(Shape in, float* params, float* grads) {
    in_ = in;
    params_ = params;
    grads_ = grads;
  }
  // Deterministic initialisation of the bound parameters from stream `stream` of `seed`.
  virtual void init(std::uint64_t /*seed*/, std::uint64_t /*stream*/) {}
  // y is resized by the layer; x is (n, in).
  virtual void forward(const Tensor& x, Tensor& y, const Context& ctx) = 0;
  // dy is like y; dx (nullable: not needed) is resized like x; gradients of the parameters are
  // written (overwritten) to the bound gradient slice.
  virtual void backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx,
                        const Context& ctx) = 0;
  // Forward multiply-adds x 2 per sample; backward is counted as 2x forward for layers with
  // weights (dx and dw), 1x for the rest.
  virtual double forward_flops(Shape in) const = 0;

 protected:
  Shape in_;
  float* params_ = nullptr;
  float* grads_ = nullptr;
};

std::unique_ptr<Layer> conv2d(int out_channels, int kernel, bool same_padding);
std::unique_ptr<Layer> maxpool2d(int kernel);
std::unique_ptr<Layer> dense(int out_features);
std::unique_ptr<Layer> relu();
std::unique_ptr<Layer> dropout(float rate, std::uint64_t layer_key);
std::unique_ptr<Layer> flatten();

}  // namespace dbs::nn
